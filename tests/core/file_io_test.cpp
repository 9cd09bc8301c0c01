// Input files by type (core/file_io.h): regular files read whole, while a FIFO, a folder, a character device or a
// missing path is refused by type in one line, without a blocking open or read; the size bound is enforced. Also the
// debug switch of CNN_CHECK messages (core/error.h): source places only in debug mode; values echoed in messages
// stay on one bounded line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "core/error_text.h"
#include "core/file_io.h"
#include "core/safetensors.h"
#include "tests/support/numeric.h"
#include "tests/support/scratch_dir.h"

namespace cnn {
namespace {

namespace fs = std::filesystem;

using test::error_of;

std::string scratch(const std::string& name) { return test::test_scratch_dir("cnn_file_io_" + name + "_"); }

TEST(FileIo, RegularFilesAreReadWhole) {
  const std::string dir = scratch("regular"), f = dir + "/a.txt";
  std::ofstream(f) << "hello";
  EXPECT_EQ(read_regular_text(f, "x"), "hello");
  EXPECT_EQ(file_kind(f), "");
  EXPECT_NO_THROW(require_regular_file(f, "x"));
  // A symlink to a regular file is followed.
  fs::create_symlink(f, dir + "/link.txt");
  EXPECT_EQ(read_regular_text(dir + "/link.txt", "x"), "hello");
  EXPECT_NE(error_of([&] { read_regular_file(f, "--model", 4); }).find("--model: '" + f + "' has 5 bytes, more than the 4"),
            std::string::npos);
}

TEST(FileIo, OtherKindsAreRefusedByType) {
  const std::string dir = scratch("kinds"), fifo = dir + "/x.JPEG";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { read_regular_file(fifo, "read"); }), "read: '" + fifo + "' is a FIFO, not a regular file");
  EXPECT_EQ(error_of([&] { read_regular_file(dir, "--config"); }), "--config: '" + dir + "' is a folder, not a regular file");
  EXPECT_EQ(error_of([&] { read_regular_file("/dev/null", "x"); }), "x: '/dev/null' is a character device, not a regular file");
  EXPECT_EQ(error_of([&] { read_regular_file(dir + "/none", "x"); }), "x: '" + dir + "/none' does not exist");
  EXPECT_EQ(file_kind(fifo), "a FIFO");
  EXPECT_EQ(file_kind(dir + "/none"), "missing");
  // A symlink loop is named with the OS reason, not as a library exception.
  fs::create_symlink(dir + "/loop", dir + "/loop");
  EXPECT_NE(error_of([&] { read_regular_file(dir + "/loop", "x"); }).find("symbolic links"), std::string::npos);
  // safetensors readers use the same checks.
  EXPECT_NE(error_of([&] { load_safetensors(fifo); }).find("is a FIFO"), std::string::npos);
  EXPECT_NE(error_of([&] { load_safetensors_metadata(dir); }).find("is a folder"), std::string::npos);
}

TEST(ErrorMessages, SourcePlacesOnlyInDebugMode) {
  const std::string raw = error_of([] { CNN_CHECK(1 == 2, "op: expected one, got ", 2); });
  ASSERT_NE(raw.find(" [1 == 2 at "), std::string::npos) << raw;
  const bool was = debug_locations();
  set_debug_locations(false);
  EXPECT_EQ(user_message(raw), "op: expected one, got 2");
  // Nested (a check's text inside another message) and several places are all removed; other brackets stay.
  EXPECT_EQ(user_message("decode: x [a] (" + raw + "); then " + raw), "decode: x [a] (op: expected one, got 2); then "
                                                                      "op: expected one, got 2");
  EXPECT_EQ(user_message("values [1 at 2] kept"), "values [1 at 2] kept");
  set_debug_locations(true);
  EXPECT_EQ(user_message(raw), raw);
  set_debug_locations(was);
}

TEST(ErrorMessages, ValuesAreEchoedOnOneBoundedLine) {
  EXPECT_EQ(printable("convnext_tiny"), "convnext_tiny");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 stays
  EXPECT_EQ(printable(std::string("a\0b\nc\x7f", 6)), "a\\x00b\\x0ac\\x7f");
  EXPECT_EQ(printable("x\xe2\x80\xa8y"), "x\\xe2\\x80\\xa8y");  // U+2028 splits lines in some readers
  EXPECT_EQ(printable("\xff\xc3"), "\\xff\\xc3");                 // not UTF-8, cut sequence
  EXPECT_EQ(printable(std::string(100, 'a'), 10), std::string(10, 'a') + "... (100 bytes)");
}

}  // namespace
}  // namespace cnn
