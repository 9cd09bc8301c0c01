// Debug switch and the removal of check places from error text.
#include "core/error_text.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

namespace cnn {

namespace {

std::atomic<bool>& debug_flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("CNN_DEBUG");
    return v != nullptr && v[0] == '1';
  }()};
  return on;
}

// Whether s[begin, end) is "<path without spaces>:<digits>".
bool is_place(const std::string& s, size_t begin, size_t end) {
  const size_t colon = s.rfind(':', end);
  if (colon == std::string::npos || colon <= begin || colon + 1 >= end) return false;
  for (size_t i = begin; i < colon; ++i)
    if (s[i] == ' ') return false;
  for (size_t i = colon + 1; i < end; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

}  // namespace

bool debug_locations() { return debug_flag().load(std::memory_order_relaxed); }
void set_debug_locations(bool on) { debug_flag().store(on, std::memory_order_relaxed); }

std::string user_message(const std::string& what) {
  if (debug_locations()) return what;
  std::string s = what;
  size_t from = 0;
  while (true) {
    const size_t at = s.find(" at ", from);
    if (at == std::string::npos) break;
    const size_t close = s.find(']', at);
    const size_t open = s.rfind(" [", at);
    if (close == std::string::npos || open == std::string::npos || !is_place(s, at + 4, close)) {
      from = at + 4;
      continue;
    }
    s.erase(open, close + 1 - open);
    from = open;
  }
  return s;
}

std::string user_error_text(const std::exception& e, const std::string& oom_hint) {
  if (const auto* fe = dynamic_cast<const std::filesystem::filesystem_error*>(&e))
    return fe->path1().empty() ? fe->code().message() : fe->path1().string() + ": " + fe->code().message();
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr)
    return oom_hint.empty() ? "out of memory" : "out of memory (" + oom_hint + ")";
  return user_message(e.what());
}

}  // namespace cnn
