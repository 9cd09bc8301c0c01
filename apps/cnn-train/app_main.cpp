// Parsing and error reporting of the command-line tools.
#include "apps/cnn-train/app_main.h"

#include "apps/cli_main.h"

namespace cnn::train {

// The tools' shared tail (apps/cli_main.h), with the recipe flags that shrink memory in the out-of-memory hint.
int run_app(CLI::App& app, int argc, char** argv, const char* name, const std::function<int()>& body) {
  return apps::run_cli(app, argc, argv, name, body, "try a smaller --batch-size, --image-size or model");
}

}  // namespace cnn::train
