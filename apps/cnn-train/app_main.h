// The shared main() of the command-line tools (cnn-train, cnn-compare, cnn-plot): CLI11 parsing, then the tool's body;
// every error is one line "<name>: error: ..." on stderr, exit status 2 for command-line syntax, 1 for the rest.
// The error text is for users (core/error_text.h): the file of a filesystem error, "out of memory" with a hint, and
// source places of failed checks only under --debug (added here to every tool) or CNN_DEBUG=1.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace cnn::train {

int run_app(CLI::App& app, int argc, char** argv, const char* name, const std::function<int()>& body);

}  // namespace cnn::train
