// The shared main() of cnn-train, cnn-compare and cnn-plot (apps/cnn-train/app_main.h): exit statuses, and error
// lines in users' text: no source place unless --debug, the file of a filesystem error first, "out of memory" with
// the recipe flags that shrink it.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "apps/cnn-train/app_main.h"
#include "core/error.h"
#include "core/error_text.h"

namespace cnn::test {
namespace {

struct Outcome {
  int status = 0;
  std::string err;
};

// Runs `body` under run_app with `args` (after the program name) and captures stderr.
Outcome run(std::vector<std::string> args, const std::function<int()>& body, bool batch_flag = false) {
  CLI::App app{"test"};
  int64_t batch = 1;
  if (batch_flag) app.add_option("--batch-size", batch, "images per batch");
  args.insert(args.begin(), "tool");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const bool was = debug_locations();
  set_debug_locations(false);
  ::testing::internal::CaptureStderr();
  Outcome o;
  o.status = train::run_app(app, int(argv.size()), argv.data(), "tool", body);
  o.err = ::testing::internal::GetCapturedStderr();
  set_debug_locations(was);
  return o;
}

int failed_check() {
  CNN_CHECK(1 == 2, "op: expected one, got ", 2);
  return 0;
}

TEST(AppMain, SourcePlacesOnlyUnderDebug) {
  Outcome o = run({}, failed_check);
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.err, "tool: error: op: expected one, got 2\n");
  o = run({"--debug"}, failed_check);
  EXPECT_EQ(o.status, 1);
  EXPECT_NE(o.err.find("tool: error: op: expected one, got 2 [1 == 2 at "), std::string::npos) << o.err;
}

TEST(AppMain, LibraryErrorsAreUserText) {
  Outcome o = run({}, []() -> int {
    throw std::filesystem::filesystem_error("cannot stat", "runs/loop/x", std::make_error_code(std::errc::io_error));
  });
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.err, "tool: error: runs/loop/x: " + std::make_error_code(std::errc::io_error).message() + "\n");
  o = run({}, []() -> int { throw std::bad_alloc(); }, true);
  EXPECT_EQ(o.err, "tool: error: out of memory (try a smaller --batch-size, --image-size or model)\n");
  o = run({}, []() -> int { throw std::bad_alloc(); });
  EXPECT_EQ(o.err, "tool: error: out of memory\n");
}

TEST(AppMain, SyntaxErrorsExitWithTwo) {
  const Outcome o = run({"--no-such-flag"}, [] { return 0; });
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("tool: error: "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("(see --help)"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace cnn::test
