// Regular-file checks and bounded whole-file reads (open with O_NONBLOCK, fstat, refuse by type, then read).
#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace cnn {

namespace {

std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

[[noreturn]] void fail_open(const std::string& path, const std::string& what, int err) {
  const std::string why = err == ENOENT ? std::string("does not exist") : str_cat("cannot open (", std::strerror(err), ")");
  throw Error(str_cat(what, ": '", path, "' ", why));
}

[[noreturn]] void fail_kind(const std::string& path, const std::string& what, const std::string& kind) {
  throw Error(str_cat(what, ": '", path, "' is ", kind, ", not a regular file"));
}

// Opens for reading without blocking on a FIFO and checks the type on the open descriptor (no race with a swap).
int open_regular(const std::string& path, const std::string& what, struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail_open(path, what, errno);
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail_open(path, what, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_kind(path, what, kind_of(st.st_mode));
  }
  return fd;
}

}  // namespace

std::string file_kind(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return kind_of(st.st_mode);
}

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st{};
  ::close(open_regular(path, what, st));
}

std::vector<uint8_t> read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  struct stat st{};
  const int fd = open_regular(path, what, st);
  if (uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    throw Error(str_cat(what, ": '", path, "' has ", st.st_size, " bytes, more than the ", max_bytes, " allowed"));
  }
  std::vector<uint8_t> out(size_t(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int err = errno;
      ::close(fd);
      throw Error(str_cat(what, ": '", path, "': read failed after ", got, " of ", out.size(), " bytes (",
                          r == 0 ? "unexpected end of file" : std::strerror(err), ")"));
    }
    got += size_t(r);
  }
  ::close(fd);
  return out;
}

std::string read_regular_text(const std::string& path, const std::string& what, uint64_t max_bytes) {
  const std::vector<uint8_t> bytes = read_regular_file(path, what, max_bytes);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace cnn
