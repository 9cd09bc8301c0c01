// Strict YAML binding: file loading with duplicate-key detection, strict scalar conversions, MapReader.
#include "models/yaml_struct.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/error_text.h"
#include "core/file_io.h"

namespace cnn::yaml_struct {

namespace {

std::string position(const YAML::Mark& m) {
  if (m.is_null() || m.line < 0) return "";
  return str_cat(m.line + 1, ":", m.column + 1);
}

constexpr const char* kStrTag = "tag:yaml.org,2002:str";

// A plain (unquoted, untagged) scalar: yaml-cpp tags those "?", quoted ones "!", `!!str x` with kStrTag; a node
// built in code (a command-line value) has no tag.
bool is_plain_scalar(const YAML::Node& node) {
  return node.IsScalar() && (node.Tag() == "?" || node.Tag().empty());
}

// A path for messages: deep ones (an alias cycle repeats [0] sixty times) keep their start.
std::string short_path(const std::string& path) {
  return path.size() <= 48 ? path : path.substr(0, 48) + "...";
}

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// One bounded walk over the tree: counts every node it visits (an alias once per reference, so an alias bomb counts
// as its expansion and an alias cycle as unbounded depth), refuses tags other than !!str, and rejects a key that
// appears twice in one map (yaml-cpp keeps both silently).
class TreeCheck {
 public:
  explicit TreeCheck(const std::string& file) : file_(file) {}

  void walk(const YAML::Node& node, const std::string& path, int depth) {
    const std::string at = path.empty() ? "document" : short_path(path);
    if (depth > kMaxDepth)
      throw Error(str_cat(where(file_, node), at, ": nested deeper than ", kMaxDepth, " levels (an alias cycle?)"));
    if (++nodes_ > kMaxNodes)
      throw Error(str_cat(where(file_, node), at, ": more than ", kMaxNodes,
                          " YAML nodes (aliases count as their expansion)"));
    const std::string& tag = node.Tag();
    if (tag != "?" && tag != "!" && tag != "" && !(tag == kStrTag && node.IsScalar()))
      throw Error(str_cat(where(file_, node), at, ": YAML tag '", tag, "' is not supported (only !!str on a scalar)"));
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) walk(node[i], str_cat(path, "[", i, "]"), depth + 1);
      return;
    }
    if (!node.IsMap()) return;
    std::map<std::string, YAML::Mark> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      walk(it->first, path, depth + 1);
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : describe(it->first);
      const std::string shown = printable(key);
      const std::string key_path = path.empty() ? shown : path + "." + shown;
      auto [pos, fresh] = seen.emplace(key, it->first.Mark());
      if (!fresh)
        throw Error(
            str_cat(where(file_, it->first), key_path, ": duplicate key (first at line ", position(pos->second), ")"));
      walk(it->second, key_path, depth + 1);
    }
  }

 private:
  const std::string& file_;
  int64_t nodes_ = 0;
};

void check_tree(const YAML::Node& node, const std::string& file, const std::string& path) {
  TreeCheck(file).walk(node, path, 0);
}

YAML::Node parse(const std::string& text, const std::string& name) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    throw Error(str_cat(name, ":", position(e.mark), ": YAML syntax error: ", e.msg));
  }
  if (docs.size() > 1)
    throw Error(str_cat(where(name, docs[1]), "a second YAML document (after '---'): expected one document, got ",
                        docs.size()));
  const YAML::Node root = docs.empty() ? YAML::Node() : docs[0];
  if (!root.IsMap()) throw Error(str_cat(name, ": expected a YAML map at the top level, got ", describe(root)));
  check_tree(root, name, "");
  return root;
}

}  // namespace

Rule<int64_t> any_int() { return {"an integer", {}}; }
Rule<int64_t> int_at_least(int64_t lo) {
  return {str_cat("an integer >= ", lo), [lo](const int64_t& v) { return v >= lo; }};
}
Rule<int64_t> int_in(int64_t lo, int64_t hi) {
  return {str_cat("an integer in [", lo, ", ", hi, "]"), [lo, hi](const int64_t& v) { return v >= lo && v <= hi; }};
}
Rule<int64_t> odd_int_at_least(int64_t lo) {
  return {str_cat("an odd integer >= ", lo), [lo](const int64_t& v) { return v >= lo && v % 2 != 0; }};
}
Rule<double> any_number() { return {"a number", {}}; }
Rule<double> number_in(double lo, double hi, bool hi_open) {
  return {str_cat("a number in [", lo, ", ", hi, hi_open ? ")" : "]"),
          [lo, hi, hi_open](const double& v) { return v >= lo && (hi_open ? v < hi : v <= hi); }};
}
Rule<double> positive_number() {
  return {"a number > 0", [](const double& v) { return v > 0; }};
}
Rule<bool> any_bool() { return {"true or false", {}}; }
Rule<std::string> any_string() { return {"a string", {}}; }
Rule<std::string> one_of(const std::vector<std::string>& choices) {
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  return {"one of " + list, [choices](const std::string& v) {
            for (const std::string& c : choices)
              if (v == c) return true;
            return false;
          }};
}

YAML::Node load_file(const std::string& path, const std::string& what) {
  return parse(read_regular_text(path, what, kMaxFileBytes), path);
}

YAML::Node load_string(const std::string& text, const std::string& name) { return parse(text, name); }

std::optional<int64_t> as_int(const YAML::Node& node) {
  if (!is_plain_scalar(node)) return std::nullopt;
  const std::string& s = node.Scalar();
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  for (size_t j = i; j < s.size(); ++j)
    if (s[j] < '0' || s[j] > '9') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return std::nullopt;
  return int64_t(v);
}

std::optional<double> as_number(const YAML::Node& node) {
  if (!is_plain_scalar(node)) return std::nullopt;
  const std::string& s = node.Scalar();
  // Digits, sign, '.', exponent only: rejects inf/nan/hex spellings strtod would accept.
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno == ERANGE || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> as_bool(const YAML::Node& node) {
  if (!is_plain_scalar(node)) return std::nullopt;
  const std::string& s = node.Scalar();
  if (s == "true") return true;
  if (s == "false") return false;
  return std::nullopt;
}

std::optional<std::string> as_string(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  return node.Scalar();
}

std::string where(const std::string& file, const YAML::Node& node) {
  const std::string pos = position(node.Mark());
  return pos.empty() ? file + ": " : file + ":" + pos + ": ";
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (!is_plain_scalar(node)) return str_cat("the string \"", printable(node.Scalar()), "\"");
  return str_cat("'", printable(node.Scalar()), "'");
}

MapReader::MapReader(const YAML::Node& node, std::string file, std::string path)
    : node_(node), file_(std::move(file)), path_(std::move(path)) {
  if (!node.IsMap())
    throw Error(
        str_cat(where(file_, node), path_.empty() ? "document" : path_, ": expected a map, got ", describe(node)));
  check_tree(node, file_, path_);
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar())
      throw Error(str_cat(where(file_, it->first), path_.empty() ? "document" : path_, ": expected a plain key, got ",
                          describe(it->first)));
    entries_.push_back({it->first.Scalar(), it->first, it->second});
  }
}

void MapReader::required(const std::string& key, int& out, const Rule<int64_t>& rule) {
  int64_t v = 0;
  required<int64_t>(key, v, rule);
  if (v < INT32_MIN || v > INT32_MAX) fail_value(value_of(key, true), child(key), rule.expected + " (32-bit)");
  out = int(v);
}

void MapReader::optional(const std::string& key, int& out, const Rule<int64_t>& rule) {
  if (has(key)) required(key, out, rule);
  known_.insert(key);
}

void MapReader::required_list(const std::string& key, std::vector<int>& out, Length length, const Rule<int64_t>& rule) {
  std::vector<int64_t> wide;
  required_list(key, wide, length, rule);
  out.clear();
  for (size_t i = 0; i < wide.size(); ++i) {
    if (wide[i] < INT32_MIN || wide[i] > INT32_MAX)
      fail_value(sequence_of(key, length)[i], str_cat(child(key), "[", i, "]"), rule.expected + " (32-bit)");
    out.push_back(int(wide[i]));
  }
}

bool MapReader::has(const std::string& key) const {
  known_.insert(key);
  for (const Entry& e : entries_)
    if (e.key == key) return true;
  return false;
}

YAML::Node MapReader::value_of(const std::string& key, bool required) const {
  known_.insert(key);
  for (const Entry& e : entries_) {
    if (e.key == key) {
      used_.insert(key);
      return e.value;
    }
  }
  if (required)
    throw Error(str_cat(where(file_, node_), path_.empty() ? "document" : path_, ": missing required key '", key, "'"));
  return YAML::Node();
}

YAML::Node MapReader::sequence_of(const std::string& key, Length length) const {
  const YAML::Node seq = value_of(key, true);
  if (!seq.IsSequence()) fail_value(seq, child(key), "a list");
  if (seq.size() < length.min || seq.size() > length.max) {
    const std::string want = length.min == length.max ? str_cat(length.min)
                             : length.max == SIZE_MAX ? str_cat("at least ", length.min)
                                                      : str_cat(length.min, " to ", length.max);
    throw Error(str_cat(where(file_, seq), child(key), ": expected a list of ", want, " entries, got ", seq.size()));
  }
  return seq;
}

void MapReader::fail_value(const YAML::Node& node, const std::string& path, const std::string& expected) const {
  throw Error(str_cat(where(file_, node), path, ": expected ", expected, ", got ", describe(node)));
}

void MapReader::finish() const {
  for (const Entry& e : entries_) {
    if (used_.count(e.key)) continue;
    throw Error(str_cat(where(file_, e.key_node), child(printable(e.key)), ": unknown key (known: ", join(known_), ")"));
  }
}

void MapReader::fail(const std::string& key, const std::string& message) const {
  for (const Entry& e : entries_)
    if (e.key == key) throw Error(str_cat(where(file_, e.value), child(key), ": ", message));
  throw Error(str_cat(where(file_, node_), child(key), ": ", message));
}

}  // namespace cnn::yaml_struct
