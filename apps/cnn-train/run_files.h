// Files of one training run: the timestamped run folder, atomic text writes, the metrics JSONL file and the
// checkpoint folders (checkpoints/step_NNNNNNNN/{model,state}.safetensors, with `last` and `best` symlinks).
// Layout and atomicity rules: docs/train.md.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cnn::train {

// Writes `text` to a temporary file in the same folder, fsyncs and renames it over `path`.
void write_file_atomic(const std::string& path, const std::string& text);

// Creates <output>/<YYYYmmdd-HHMMSS>-<model> (a -N suffix when taken) and returns it.
std::string make_run_dir(const std::string& output, const std::string& model_name);

// Append-only JSON Lines file, one record per line, flushed after each line.
class MetricsLog {
 public:
  MetricsLog() = default;
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Opens `path` for appending. With keep_through_step >= 0 the file is first rewritten (atomically) without the
  // records whose "step" is greater: a resumed run replays those steps.
  void open(const std::string& path, int64_t keep_through_step = -1);
  void write(const nlohmann::json& record);
  bool is_open() const { return file_ != nullptr; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

// The checkpoint folders of a run. Each checkpoint is a folder written under a temporary name and renamed into
// place; `last` and `best` are relative symlinks replaced by rename, so a crash never leaves a torn checkpoint.
class CheckpointDir {
 public:
  explicit CheckpointDir(std::string run_dir);

  // Folder of the checkpoint of a step: <run>/checkpoints/step_<8 digits>.
  std::string step_dir(int64_t step) const;
  // Temporary folder to write a checkpoint into; commit() renames it to step_dir(step).
  std::string begin(int64_t step) const;
  void commit(int64_t step) const;
  // Points `name` ("last" or "best") at step_dir(step).
  void link(const std::string& name, int64_t step) const;
  // Removes periodic checkpoint folders beyond the newest `keep` (the targets of last and best always stay).
  void prune(int64_t keep) const;
  // Steps that have a checkpoint folder, ascending.
  std::vector<int64_t> steps() const;
  // The step a link points to, or -1.
  int64_t linked_step(const std::string& name) const;

 private:
  std::string root_;
};

// Removes what a killed process left in a run folder and its checkpoints/: `*.tmp.<pid>` files and folders of
// processes that no longer run, and `*.old` folders of an interrupted re-save. Returns how many.
int64_t remove_stale_temporaries(const std::string& run_dir);

// What --resume DIR names: a run folder (its checkpoints/last) or one checkpoint folder. Returns the checkpoint
// folder (with model.safetensors and state.safetensors) and sets run_dir. Missing pieces are one-line errors.
std::string resolve_resume(const std::string& arg, std::string& run_dir);

// Process CPU time (user + system) in seconds.
double process_cpu_seconds();

}  // namespace cnn::train
