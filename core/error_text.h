// Error text for users. CNN_CHECK (core/error.h) appends " [cond at /path/file.cpp:N]" for developers; the apps
// print user_message(e.what()), which drops those places unless debug mode is on (environment CNN_DEBUG=1, or
// set_debug_locations(true), e.g. from `cnn-train --debug`).
#pragma once

#include <string>

namespace cnn {

bool debug_locations();
void set_debug_locations(bool on);

// `what` without the " [cond at file:line]" parts of failed checks (kept in debug mode).
std::string user_message(const std::string& what);

}  // namespace cnn
