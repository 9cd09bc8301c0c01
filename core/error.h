// Errors and always-on checks. Library code throws cnn::Error; only apps/ catch and set the exit code.
// CUDA-library checks (CNN_CUDA_CHECK, CNN_CUBLAS_CHECK, CNN_CUDNN_CHECK, ...) live in core/cuda_check.h.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace cnn {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Concatenates any streamable values into one string: str_cat("got ", 3, " channels").
template <class... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

namespace detail {
[[noreturn]] inline void throw_check_failure(const char* cond, const char* file, int line, const std::string& msg) {
  throw Error(str_cat(msg.empty() ? std::string("check failed") : msg, " [", cond, " at ", file, ":", line, "]"));
}
}  // namespace detail

}  // namespace cnn

// CNN_CHECK(cond, "op: expected ..., got ", x): throws cnn::Error with the message, the condition and the place.
#define CNN_CHECK(cond, ...)                                                                            \
  do {                                                                                                  \
    if (!(cond)) ::cnn::detail::throw_check_failure(#cond, __FILE__, __LINE__, ::cnn::str_cat(__VA_ARGS__)); \
  } while (0)
