// Strict YAML -> typed struct binding, shared by model configs (configs/models) and training recipes (configs/train).
// Unknown keys, duplicate keys, missing required keys, wrong types and values a rule rejects are cnn::Errors of the
// form `file:line:col: stages[2].kernel_size: expected an odd integer >= 1, got 'seven'` (1-based line and column).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace cnn::yaml_struct {

// A value constraint: `expected` completes "expected ..." in messages (e.g. "an odd integer >= 1").
template <class T>
struct Rule {
  std::string expected;
  std::function<bool(const T&)> ok;  // empty: any value of the type
};

Rule<int64_t> any_int();
Rule<int64_t> int_at_least(int64_t lo);
Rule<int64_t> int_in(int64_t lo, int64_t hi);  // closed range
Rule<int64_t> odd_int_at_least(int64_t lo);
Rule<double> any_number();
Rule<double> number_in(double lo, double hi, bool hi_open = false);  // [lo, hi] or [lo, hi)
Rule<double> positive_number();
Rule<bool> any_bool();
Rule<std::string> any_string();
Rule<std::string> one_of(const std::vector<std::string>& choices);

// Length constraint of a YAML sequence.
struct Length {
  size_t min = 0;
  size_t max = SIZE_MAX;
  static Length exactly(size_t n) { return {n, n}; }
  static Length at_least(size_t n) { return {n, SIZE_MAX}; }
};

// Bounds of one YAML file: its size, the nodes visited (an alias counted at every reference, i.e. as its expansion)
// and the nesting depth (an alias cycle exceeds it).
constexpr uint64_t kMaxFileBytes = 4u << 20;
constexpr int64_t kMaxNodes = 100000;
constexpr int kMaxDepth = 64;

// Parses a YAML file of one document (syntax errors become `file:line:col: YAML syntax error: ...`) and rejects
// duplicate keys, tags other than !!str (honoured: the scalar is a string) and trees beyond the bounds above.
// `path` names the file in every later message; `what` prefixes the errors of opening it (a flag such as --model):
// only regular files are read (a folder or FIFO is refused by type).
YAML::Node load_file(const std::string& path, const std::string& what = "config file");
YAML::Node load_string(const std::string& text, const std::string& name);

// The scalar conversions, strict: integers are plain decimal (no quotes, no fraction), numbers are plain decimal
// or exponent notation, booleans are true/false (lowercase); a quoted or !!str scalar is a string only. Each returns nullopt when the node is not such a value.
std::optional<int64_t> as_int(const YAML::Node& node);
std::optional<double> as_number(const YAML::Node& node);
std::optional<bool> as_bool(const YAML::Node& node);
std::optional<std::string> as_string(const YAML::Node& node);

// "file:line:col: " for a node ("file: " when yaml-cpp has no position for it).
std::string where(const std::string& file, const YAML::Node& node);
// The value as the user wrote it, for "got ...": 'seven', the string "7" (quoted), a map, a list, nothing.
std::string describe(const YAML::Node& node);

// Reads the keys of one YAML map into a struct. Every key must be consumed by required()/optional()/... before
// finish(), which rejects the leftovers as unknown. Duplicate keys are rejected at construction.
class MapReader {
 public:
  // path: the dotted position of this map ("" for the document root, "stages[2]" for a nested one).
  MapReader(const YAML::Node& node, std::string file, std::string path);

  template <class T>
  void required(const std::string& key, T& out, const Rule<T>& rule) {
    out = convert(value_of(key, true), key, rule);
  }
  template <class T>
  void optional(const std::string& key, T& out, const Rule<T>& rule) {  // keeps `out` when the key is absent
    if (has(key)) out = convert(value_of(key, false), key, rule);
  }
  void required(const std::string& key, int& out, const Rule<int64_t>& rule);
  void optional(const std::string& key, int& out, const Rule<int64_t>& rule);

  // A list of scalars: `depths: [3, 3, 9, 3]`; element errors name `depths[1]`.
  template <class T>
  void required_list(const std::string& key, std::vector<T>& out, Length length, const Rule<T>& rule) {
    out = convert_list(key, length, rule);
  }
  template <class T>
  void optional_list(const std::string& key, std::vector<T>& out, Length length, const Rule<T>& rule) {
    if (has(key)) out = convert_list(key, length, rule);
  }
  void required_list(const std::string& key, std::vector<int>& out, Length length, const Rule<int64_t>& rule);

  // A nested map or a list of nested maps, each bound by `bind(reader, item)` (finish() is called for you).
  template <class S>
  void required_struct(const std::string& key, S& out, const std::function<void(MapReader&, S&)>& bind) {
    MapReader sub(value_of(key, true), file_, child(key));
    bind(sub, out);
    sub.finish();
  }
  template <class S>
  void required_struct_list(const std::string& key, std::vector<S>& out, Length length,
                            const std::function<void(MapReader&, S&)>& bind) {
    const YAML::Node seq = sequence_of(key, length);
    out.assign(seq.size(), S{});
    for (size_t i = 0; i < seq.size(); ++i) {
      MapReader sub(seq[i], file_, child(key) + "[" + std::to_string(i) + "]");
      bind(sub, out[i]);
      sub.finish();
    }
  }

  bool has(const std::string& key) const;
  // Rejects keys no call consumed: `file:l:c: stages[0].kernel: unknown key (known: depth, dim, kernel_size)`.
  void finish() const;

  // For checks across fields: throws `file:l:c: <path>.<key>: <message>` at the key's value (or at the map).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };
  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::vector<Entry> entries_;
  mutable std::set<std::string> known_;  // every key a reader asked about, for finish()'s message
  mutable std::set<std::string> used_;

  std::string child(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  YAML::Node value_of(const std::string& key, bool required) const;
  YAML::Node sequence_of(const std::string& key, Length length) const;
  [[noreturn]] void fail_value(const YAML::Node& node, const std::string& path, const std::string& expected) const;

  static std::optional<int64_t> scalar(const YAML::Node& n, int64_t*) { return as_int(n); }
  static std::optional<double> scalar(const YAML::Node& n, double*) { return as_number(n); }
  static std::optional<bool> scalar(const YAML::Node& n, bool*) { return as_bool(n); }
  static std::optional<std::string> scalar(const YAML::Node& n, std::string*) { return as_string(n); }

  template <class T>
  T convert_at(const YAML::Node& node, const std::string& path, const Rule<T>& rule) const {
    const std::optional<T> v = scalar(node, static_cast<T*>(nullptr));
    if (!v || (rule.ok && !rule.ok(*v))) fail_value(node, path, rule.expected);
    return *v;
  }
  template <class T>
  T convert(const YAML::Node& node, const std::string& key, const Rule<T>& rule) const {
    return convert_at(node, child(key), rule);
  }
  template <class T>
  std::vector<T> convert_list(const std::string& key, Length length, const Rule<T>& rule) const {
    const YAML::Node seq = sequence_of(key, length);
    std::vector<T> out;
    for (size_t i = 0; i < seq.size(); ++i)
      out.push_back(convert_at(seq[i], child(key) + "[" + std::to_string(i) + "]", rule));
    return out;
  }
};

}  // namespace cnn::yaml_struct
