// The training-step tour (docs/tutorial/training-step.md) names a file and a function at every stop; this test reads
// the page and checks that every named file exists and every named function is declared or defined in one of the
// files of its stop, so the tour cannot drift from the tree.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

struct Stop {
  std::string title;
  std::vector<std::string> files;      // `dir/file.ext`
  std::vector<std::string> functions;  // `Class::method()` or `function()`
};

fs::path source_dir() {
  const char* dir = std::getenv("CNN_SOURCE_DIR");
  return dir != nullptr ? fs::path(dir) : fs::path(CNN_SOURCE_DIR_FALLBACK);
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// Stops are the "## " sections; names are the backticked spans of each.
std::vector<Stop> parse_stops(const std::string& page) {
  static const std::regex code("`([^`]+)`");
  static const std::regex file_name(R"(^[A-Za-z0-9_./-]+/[A-Za-z0-9_.-]+\.(h|cuh|cpp|cu|yaml|md|sh)$)");
  static const std::regex function_name(R"(^[A-Za-z_][A-Za-z0-9_:~]*\(\)$)");
  std::vector<Stop> stops;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("## ", 0) == 0) {
      stops.push_back(Stop{line.substr(3), {}, {}});
      continue;
    }
    if (stops.empty()) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), code), end; it != end; ++it) {
      const std::string span = (*it)[1];
      if (std::regex_match(span, file_name)) stops.back().files.push_back(span);
      if (std::regex_match(span, function_name)) stops.back().functions.push_back(span.substr(0, span.size() - 2));
    }
  }
  return stops;
}

// `name(` as a whole identifier, e.g. "Tape::backward" -> "backward(" and, for the class, "Tape" somewhere.
bool names_function(const std::string& text, const std::string& qualified) {
  const size_t colon = qualified.rfind("::");
  const std::string name = colon == std::string::npos ? qualified : qualified.substr(colon + 2);
  const std::regex call("(^|[^A-Za-z0-9_])" + name + R"(\s*\()");
  if (!std::regex_search(text, call)) return false;
  if (colon == std::string::npos) return true;
  const std::string owner = qualified.substr(0, colon);
  const size_t outer = owner.rfind("::");
  return text.find(outer == std::string::npos ? owner : owner.substr(outer + 2)) != std::string::npos;
}

TEST(TutorialNames, TrainingStepTourNamesOnlyFilesAndFunctionsThatExist) {
  const fs::path page = source_dir() / "docs/tutorial/training-step.md";
  ASSERT_TRUE(fs::exists(page)) << page;
  const std::vector<Stop> stops = parse_stops(read_file(page));
  ASSERT_GE(stops.size(), 7u) << "the tour has a stop per station: loader, tensor, forward, tape, backward, "
                                 "loss scaler, AdamW";
  for (const Stop& stop : stops) {
    if (stop.title.rfind("Stop", 0) != 0) continue;  // only the stops must name a file and a function
    EXPECT_FALSE(stop.files.empty()) << stop.title << ": names no file";
    EXPECT_FALSE(stop.functions.empty()) << stop.title << ": names no function";
    std::string texts;
    for (const std::string& f : stop.files) {
      EXPECT_TRUE(fs::exists(source_dir() / f)) << stop.title << ": no file " << f;
      texts += read_file(source_dir() / f) + "\n";
    }
    for (const std::string& fn : stop.functions)
      EXPECT_TRUE(names_function(texts, fn)) << stop.title << ": " << fn << "() is in none of its files";
  }
}

TEST(TutorialNames, ParserFindsFilesAndFunctionsOfEachStop) {
  const std::vector<Stop> stops = parse_stops(
      "intro `core/x.h`\n## Stop 1\nsee `core/tensor.h` and `Tensor::empty()`; not `a b` or `x()y`\n## Stop "
      "2\n`f()`\n");
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[0].files, std::vector<std::string>{"core/tensor.h"});
  EXPECT_EQ(stops[0].functions, std::vector<std::string>{"Tensor::empty"});
  EXPECT_EQ(stops[1].functions, std::vector<std::string>{"f"});
  EXPECT_TRUE(names_function("static Tensor empty(const Shape&); class Tensor", "Tensor::empty"));
  EXPECT_FALSE(names_function("static Tensor empty_like(const Shape&);", "Tensor::empty"));
  EXPECT_FALSE(names_function("void empty();", "Tensor::empty"));  // no Tensor in the text
}

}  // namespace
}  // namespace cnn::test
