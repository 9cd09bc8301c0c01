// Explicit autograd tape: ops record nodes (inputs, outputs, a backward closure capturing only what it needs);
// Tape::backward replays them in reverse and ACCUMULATES (+=) into the FP32 grad of every leaf that requires grad.
// The tape is owned by the caller (no global graph) and frees its nodes after backward unless retain_graph.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace cnn {

// Gradients w.r.t. the inputs (one per input, undefined where none flows) from gradients w.r.t. the outputs.
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs)>;

// Whether ops record on the current thread (false inside a NoGradGuard).
bool grad_enabled();

class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Watches a tape's work, for profiling: the ops it records (called right after each op's forward ran), the
// module scopes the forward passes through (Module::call) and every node replayed by backward. Keys are opaque to
// the tape: a scope key is the Module's address; a node's tag is whatever on_record returned for it.
class TapeObserver {
 public:
  virtual ~TapeObserver() = default;
  virtual void on_scope_begin(const void* scope) = 0;
  virtual void on_scope_end(const void* scope) = 0;
  virtual int on_record(const char* op) = 0;
  virtual void on_backward_begin() = 0;
  virtual void on_node_begin(const std::string& op, int tag) = 0;  // before the node's backward closure
  virtual void on_node_end(const std::string& op, int tag) = 0;    // after it, before its gradients accumulate
  virtual void on_backward_end() = 0;
};

class Tape {
 public:
  Tape() = default;
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // True when an op given `tape` should record: tape non-null, grad enabled, some input requires grad.
  static bool should_record(const Tape* tape, std::initializer_list<const Tensor*> inputs);

  // Records `op`: marks each output as a non-leaf requiring grad and stores the node. Call only when
  // should_record returned true. The closure must return inputs.size() gradients shaped like the inputs.
  void record(const char* op, std::initializer_list<const Tensor*> inputs, std::initializer_list<Tensor*> outputs,
              BackwardFn backward);

  // loss must hold one element; its seed gradient is 1.
  void backward(const Tensor& loss, bool retain_graph = false);
  // Explicit seed of loss's shape (cast to loss's dtype where they differ).
  void backward(const Tensor& root, const Tensor& seed, bool retain_graph = false);

  size_t size() const { return nodes_.size(); }
  void clear();

  // Observer of this tape's work (null: none); not owned, must outlive the tape's use.
  void set_observer(TapeObserver* observer) { observer_ = observer; }
  TapeObserver* observer() const { return observer_; }

 private:
  struct InputSlot {
    std::shared_ptr<AutogradMeta> meta;  // null when the input does not require grad
    Shape shape;
    Device device;
  };
  struct OutputSlot {
    std::shared_ptr<AutogradMeta> meta;
    Shape shape;
    DType dtype;
    Device device;
  };
  struct Node {
    std::string op;
    std::vector<InputSlot> inputs;
    std::vector<OutputSlot> outputs;
    BackwardFn backward;
    int tag = 0;  // the observer's tag for this node
  };
  std::vector<Node> nodes_;
  bool freed_ = false;
  TapeObserver* observer_ = nullptr;
};

}  // namespace cnn
