// StepTrace: the weights, batches and losses of a traced benchmark run.
#include "apps/cnn-train/trace.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/cnn-train/run_files.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "models/checkpoint.h"

namespace cnn::train {

namespace fs = std::filesystem;

StepTrace::StepTrace(const std::string& dir, const Module& model) : dir_(dir) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  CNN_CHECK(!ec && fs::is_directory(dir_), "--trace-dir: cannot create folder '", dir_, "': ", ec.message());
  CNN_CHECK(!fs::exists(fs::path(dir_) / "losses.json"), "--trace-dir: '", dir_,
            "' already holds a trace (losses.json); give a new folder");
  save_checkpoint((fs::path(dir_) / "init.safetensors").string(), model, {{"format", "cnn trace initial weights"}});
}

void StepTrace::record(const data::Batch& batch, const Tensor& loss) {
  const std::string name = str_cat("batch_", losses_.size(), ".safetensors");
  save_safetensors((fs::path(dir_) / name).string(),
                   {{"images", batch.images.to(DType::f32)}, {"labels", batch.labels.to(DType::i64)}});
  losses_.push_back(loss.item());
}

void StepTrace::finish() {
  write_file_atomic((fs::path(dir_) / "losses.json").string(), nlohmann::json{{"losses", losses_}}.dump() + "\n");
}

}  // namespace cnn::train
