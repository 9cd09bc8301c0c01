// Error text for users. CNN_CHECK (core/error.h) appends " [cond at /path/file.cpp:N]" for developers; the apps
// print user_message(e.what()), which drops those places unless debug mode is on (environment CNN_DEBUG=1, or
// set_debug_locations(true), e.g. from `cnn-train --debug`).
#pragma once

#include <exception>
#include <string>

namespace cnn {

bool debug_locations();
void set_debug_locations(bool on);

// `what` without the " [cond at file:line]" parts of failed checks (kept in debug mode).
std::string user_message(const std::string& what);

// A value from a file or the command line as it may appear inside a one-line message: control characters, line
// separators and bytes that are not UTF-8 written as \xNN, and at most `max_bytes` of it (then "... (N bytes)").
std::string printable(const std::string& value, size_t max_bytes = 80);

// The text of an error line for a user: a filesystem error names its path first (the library's text names the call,
// not the file), std::bad_alloc is "out of memory" followed by `oom_hint` when there is one, anything else is
// user_message(e.what()).
std::string user_error_text(const std::exception& e, const std::string& oom_hint = "");

}  // namespace cnn
