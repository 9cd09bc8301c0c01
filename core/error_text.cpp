// Debug switch, the removal of check places from error text, and printable excerpts of values.
#include "core/error_text.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "core/error.h"

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

// Length of the UTF-8 sequence at s[i] when it is a valid, printable one (not overlong, no surrogate, not U+0085,
// U+2028 or U+2029, which split lines), else 0.
size_t printable_utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  const size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  const uint32_t min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  if (cp == 0x85 || cp == 0x2028 || cp == 0x2029 || (cp >= 0x80 && cp < 0xA0)) return 0;
  return n;
}

}  // namespace

std::string printable(const std::string& value, size_t max_bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  size_t i = 0;
  while (i < value.size() && out.size() < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += char(c);
      ++i;
    } else if (const size_t n = c >= 0x80 ? printable_utf8_length(value, i) : 0; n > 0) {
      out.append(value, i, n);
      i += n;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    }
  }
  if (i < value.size()) out += str_cat("... (", value.size(), " bytes)");
  return out;
}

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
