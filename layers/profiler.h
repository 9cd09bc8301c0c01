// Step profiler: a TapeObserver that cuts every training step into consecutive timed segments (core/timeline.h:
// CUDA events on the GPU, the host clock on the CPU) and charges each to (phase, op kind, module path). A forward
// segment ends where an op records (it ran that op's kernels); a backward segment ends after a node's closure;
// what runs between closures (seed, zero gradients, summing gradients of shared tensors) is "grad accumulation";
// the caller names the rest of the step with mark(). The segments tile the step, so every table sums to it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/autograd.h"
#include "core/timeline.h"
#include "layers/module.h"

namespace cnn {

// Per-step means over the profiled steps.
struct ProfileRow {
  std::string name;
  std::string type;  // layers: the module's type name
  double forward_ms = 0, backward_ms = 0, other_ms = 0;
  double calls = 0;  // segments per step
  double total_ms() const { return forward_ms + backward_ms + other_ms; }
};

struct StepProfile {
  int64_t steps = 0;
  double step_ms = 0;                      // mean step time
  double forward_ms = 0, backward_ms = 0;  // phases
  double other_ms = 0;                     // outside forward and backward (data, optimizer, ...)
  std::vector<ProfileRow> ops;             // by op kind (forward and backward), then the caller's marks
  std::vector<ProfileRow> layers;          // by module path; "(no module)" and "(autograd)" hold the rest
  std::vector<ProfileRow> types;           // the layers summed by module type (name = type; calls = layers' calls)
};

class StepProfiler : public TapeObserver {
 public:
  static constexpr const char* kAccumulate = "grad accumulation";
  static constexpr const char* kNoModule = "(no module)";
  static constexpr const char* kAutograd = "(autograd)";
  static constexpr const char* kOutside = "(outside forward/backward)";

  // `root` names the modules (dotted paths as in checkpoints); it must outlive the profiler.
  StepProfiler(const Module& root, Device device);

  void begin_step();
  // Ends the segment running since the previous mark as caller work named `label` (outside forward/backward).
  void mark(const std::string& label);
  // Ends the step (what ran since the last mark is charged to "step end"); waits for the device.
  void end_step();
  StepProfile summary() const;

  void on_scope_begin(const void* scope) override;
  void on_scope_end(const void* scope) override;
  int on_record(const char* op) override;
  void on_backward_begin() override;
  void on_node_begin(const std::string& op, int tag) override;
  void on_node_end(const std::string& op, int tag) override;
  void on_backward_end() override;

 private:
  enum class Phase { forward, backward, other };
  struct Key {
    Phase phase;
    std::string op;
    std::string layer;
  };
  int key(Phase phase, const std::string& op, const std::string& layer);
  void end_segment(int key);
  const std::string& current_layer() const;

  std::map<const void*, std::pair<std::string, std::string>> modules_;  // address -> (path, type name)
  std::vector<const void*> scopes_;                                     // open module scopes, innermost last
  DeviceTimeline timeline_;
  std::vector<int> segment_keys_;  // key of the segment ending at each mark after the first
  std::vector<Key> keys_;
  std::map<std::tuple<int, std::string, std::string>, int> key_index_;
  std::vector<double> key_ms_;
  std::vector<int64_t> key_calls_;
  int64_t steps_ = 0;
  double total_ms_ = 0;
  bool in_step_ = false;
};

// The report cnn-train --profile prints: phases, the op-kind and module-type tables and the `max_layers` most
// expensive layers.
std::string format_profile(const StepProfile& p, size_t max_layers);

}  // namespace cnn
