// Run folder, atomic writes, metrics JSONL, checkpoint folders with atomically replaced symlinks.
#include "apps/cnn-train/run_files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"

namespace cnn::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStepPrefix = "step_";

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename itself is what makes the update atomic
  ::fsync(fd);
  ::close(fd);
}

std::string temp_name(const fs::path& path) { return str_cat(path.string(), ".tmp.", ::getpid()); }

// The step of a folder named step_NNNNNNNN, or -1.
int64_t parse_step(const std::string& name) {
  const std::string prefix = kStepPrefix;
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return -1;
  int64_t v = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = temp_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(str_cat(path, ": cannot create ", tmp, " (", std::strerror(errno), ")"));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(str_cat(path, ": write failed (", std::strerror(errno), ")"));
    }
    done += size_t(w);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(str_cat(path, ": cannot replace atomically (", std::strerror(err), ")"));
  }
  fsync_dir(fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path());
}

std::string make_run_dir(const std::string& output, const std::string& model_name) {
  std::error_code ec;
  fs::create_directories(output, ec);
  if (ec) throw Error(str_cat("--output: cannot create folder '", output, "': ", ec.message()));
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  const std::string base = (fs::path(output) / (std::string(stamp) + "-" + model_name)).string();
  for (int n = 1; n < 1000; ++n) {
    const std::string dir = n == 1 ? base : str_cat(base, "-", n);
    if (fs::create_directory(dir, ec)) return dir;  // false when it already exists: try the next suffix
    if (ec) throw Error(str_cat("--output: cannot create run folder '", dir, "': ", ec.message()));
  }
  throw Error(str_cat("--output: too many run folders named ", base, "-N"));
}

// ---- MetricsLog ------------------------------------------------------------------------------------------------

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::open(const std::string& path, int64_t keep_through_step) {
  path_ = path;
  std::error_code ec;
  if (keep_through_step >= 0 && fs::exists(path, ec)) {
    require_regular_file(path, "metrics");
    std::ifstream in(path);
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      nlohmann::json record;
      try {
        record = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        break;  // a line cut by a crash ends the usable part of the file
      }
      if (!record.is_object() || !record.contains("step") || !record["step"].is_number_integer())
        throw Error(str_cat(path, ": line without an integer \"step\" (", line.substr(0, 80),
                            "); the file is written by cnn-train, restore or remove it"));
      if (record["step"].get<int64_t>() > keep_through_step) continue;
      kept += line + "\n";
    }
    write_file_atomic(path, kept);
  }
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw Error(str_cat(path, ": cannot open metrics file (", std::strerror(errno), ")"));
}

void MetricsLog::write(const nlohmann::json& record) {
  if (!file_) return;
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw Error(str_cat(path_, ": cannot append a metrics record (", std::strerror(errno), ")"));
}

// ---- CheckpointDir ---------------------------------------------------------------------------------------------

CheckpointDir::CheckpointDir(std::string run_dir) : root_((fs::path(run_dir) / "checkpoints").string()) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw Error(str_cat("checkpoints: cannot create '", root_, "': ", ec.message()));
}

std::string CheckpointDir::step_dir(int64_t step) const {
  char name[32];
  std::snprintf(name, sizeof name, "%s%08lld", kStepPrefix, static_cast<long long>(step));
  return (fs::path(root_) / name).string();
}

std::string CheckpointDir::begin(int64_t step) const {
  const std::string tmp = temp_name(step_dir(step));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) throw Error(str_cat("checkpoints: cannot create '", tmp, "': ", ec.message()));
  return tmp;
}

void CheckpointDir::commit(int64_t step) const {
  const std::string dir = step_dir(step), tmp = temp_name(dir);
  fsync_dir(tmp);
  std::error_code ec;
  if (fs::exists(dir)) {
    // A folder of the same step is replaced (re-saved after a resume): move it aside first, then drop it.
    const std::string old = dir + ".old";
    fs::remove_all(old, ec);
    fs::rename(dir, old, ec);
    if (ec) throw Error(str_cat("checkpoints: cannot move '", dir, "' aside: ", ec.message()));
    fs::rename(tmp, dir, ec);
    fs::remove_all(old);
  } else {
    fs::rename(tmp, dir, ec);
  }
  if (ec) throw Error(str_cat("checkpoints: cannot rename '", tmp, "' to '", dir, "': ", ec.message()));
  fsync_dir(root_);
}

void CheckpointDir::link(const std::string& name, int64_t step) const {
  const fs::path link = fs::path(root_) / name;
  const std::string tmp = temp_name(link);
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_directory_symlink(fs::path(step_dir(step)).filename(), tmp, ec);
  if (ec) throw Error(str_cat("checkpoints: cannot create link '", tmp, "': ", ec.message()));
  if (::rename(tmp.c_str(), link.c_str()) != 0)
    throw Error(str_cat("checkpoints: cannot replace '", link.string(), "' (", std::strerror(errno), ")"));
  fsync_dir(root_);
}

int64_t CheckpointDir::linked_step(const std::string& name) const {
  std::error_code ec;
  const fs::path target = fs::read_symlink(fs::path(root_) / name, ec);
  return ec ? -1 : parse_step(target.filename().string());
}

std::vector<int64_t> CheckpointDir::steps() const {
  std::vector<int64_t> out;
  for (const auto& entry : fs::directory_iterator(root_)) {
    if (entry.is_symlink() || !entry.is_directory()) continue;
    const int64_t s = parse_step(entry.path().filename().string());
    if (s >= 0) out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void CheckpointDir::prune(int64_t keep) const {
  const int64_t last = linked_step("last"), best = linked_step("best");
  std::vector<int64_t> all = steps();
  int64_t kept = 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (*it == last || *it == best) continue;
    if (kept++ < keep) continue;
    std::error_code ec;
    fs::remove_all(step_dir(*it), ec);
    if (ec) throw Error(str_cat("checkpoints: cannot remove '", step_dir(*it), "': ", ec.message()));
  }
}

int64_t remove_stale_temporaries(const std::string& run_dir) {
  int64_t removed = 0;
  for (const fs::path& dir : {fs::path(run_dir), fs::path(run_dir) / "checkpoints"}) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const size_t at = name.rfind(".tmp.");
      const bool old = name.size() > 4 && name.compare(name.size() - 4, 4, ".old") == 0;
      if (at == std::string::npos && !old) continue;
      if (!old) {
        const std::string pid_text = name.substr(at + 5);
        if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos)
          continue;
        const pid_t pid = pid_t(std::stol(pid_text));
        // A live process (another cnn-train on this run) owns its temporaries; only the dead one's are stale.
        if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
      }
      std::error_code rm;
      fs::remove_all(it->path(), rm);
      if (rm) throw Error(str_cat("run folder: cannot remove stale '", it->path().string(), "': ", rm.message()));
      ++removed;
    }
  }
  return removed;
}

std::string resolve_resume(const std::string& arg, std::string& run_dir) {
  const fs::path p(arg);
  std::error_code ec;
  if (!fs::is_directory(p, ec))
    throw Error(str_cat("--resume: '", arg, "' is not a folder (expected a run folder or a checkpoint folder)"));
  fs::path ckpt;
  if (fs::exists(p / "state.safetensors", ec)) {
    ckpt = p;
    run_dir = fs::weakly_canonical(p).parent_path().parent_path().string();  // <run>/checkpoints/<ckpt>
  } else if (fs::exists(p / "checkpoints" / "last" / "state.safetensors", ec)) {
    ckpt = p / "checkpoints" / "last";
    run_dir = p.string();
  } else if (fs::is_regular_file(p / "config.yaml", ec)) {
    throw Error(str_cat("--resume: the run in '", arg,
                        "' has no checkpoint yet (it stopped before its first save); start it anew with: cnn-train "
                        "--config ",
                        (p / "config.yaml").string()));
  } else {
    throw Error(
        str_cat("--resume: '", arg, "' holds neither state.safetensors nor checkpoints/last/state.safetensors"));
  }
  for (const char* f : {"model.safetensors", "state.safetensors"})
    require_regular_file((ckpt / f).string(), "--resume");
  require_regular_file((fs::path(run_dir) / "config.yaml").string(), "--resume");
  return ckpt.string();
}

double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace cnn::train
