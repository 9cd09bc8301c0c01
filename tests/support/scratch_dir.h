// Per-test scratch directories for tests that write files.
#pragma once

#include <string>

namespace cnn::test {

// A fresh, empty directory for the running test: <gtest TempDir>/<prefix><suite>_<test>.<pid>. The process id keeps
// two runs of the suites on one machine (two checkouts, a release and a sanitizer build) out of each other's files.
std::string test_scratch_dir(const std::string& prefix);

}  // namespace cnn::test
