// Parsing and error reporting of the command-line tools.
#include "apps/cnn-train/app_main.h"

#include <cstdio>
#include <exception>
#include <string>

#include "core/error_text.h"

namespace cnn::train {

int run_app(CLI::App& app, int argc, char** argv, const char* name, const std::function<int()>& body) {
  bool debug = false;
  app.add_flag("--debug", debug, "append the failed condition and source place to internal errors (or CNN_DEBUG=1)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s (see --help)\n", name, e.what());
    return 2;
  }
  if (debug) set_debug_locations(true);
  // Tools that take the recipe flags can name the ones that shrink memory.
  const std::string oom_hint =
      app.get_option_no_throw("--batch-size") != nullptr ? "try a smaller --batch-size, --image-size or model" : "";
  try {
    return body();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", name, user_error_text(e, oom_hint).c_str());
    return 1;
  }
}

}  // namespace cnn::train
