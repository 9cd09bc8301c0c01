// What the tools' main()s share (cnn-eval, cnn-predict, cnn-export, dwconv): the --model / --checkpoint pair, and
// the tail: CLI11 parse errors are one line on stderr with exit status 2, --help exits 0, and any exception from
// the run is one line with exit status 1, in the users' text of core/error_text.h (source places of failed checks
// only under --debug, added here to every tool, or CNN_DEBUG=1).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "core/error_text.h"

namespace cnn::apps {

// --model M (a configs/models name or a YAML path) and --checkpoint FILE, both required.
inline void add_model_flags(CLI::App& app, std::string& model, std::string& checkpoint) {
  app.add_option("--model", model, "model name in configs/models or a model YAML path")->required();
  app.add_option("--checkpoint", checkpoint, "safetensors state dict (cnn, timm or reference names)")
      ->required()
      ->type_name("FILE");
}

// `oom_hint`: what an out-of-memory error suggests, for tools that take --batch-size.
template <class Run>
int run_cli(CLI::App& app, int argc, char** argv, const char* tool, Run run,
            const char* oom_hint = "try a smaller --batch-size") {
  bool debug = false;
  app.add_flag("--debug", debug, "append the failed condition and source place to internal errors (or CNN_DEBUG=1)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "%s: error: %s (see --help)\n", tool, e.what());
    return 2;
  }
  if (debug) set_debug_locations(true);
  const std::string hint = app.get_option_no_throw("--batch-size") != nullptr ? oom_hint : "";
  try {
    return run();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", tool, user_error_text(e, hint).c_str());
    return 1;
  }
}

}  // namespace cnn::apps
