// Parsing and error reporting of the command-line tools.
#include "apps/cnn-train/app_main.h"

#include <cstdio>
#include <exception>

namespace cnn::train {

int run_app(CLI::App& app, int argc, char** argv, const char* name, const std::function<int()>& body) {
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
  try {
    return body();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace cnn::train
