// The shared main() tail of the tools (cnn-eval, cnn-predict, cnn-export, dwconv): CLI11 parse errors are one line
// on stderr with exit status 2, --help exits 0, and any exception from the run is one line with exit status 1.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

namespace cnn::apps {

template <class Run>
int run_cli(CLI::App& app, int argc, char** argv, const char* tool, Run run) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "%s: error: %s (see --help)\n", tool, e.what());
    return 2;
  }
  try {
    return run();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 1;
  }
}

}  // namespace cnn::apps
