// StepProfiler: segment bookkeeping, per-step means and the printed tables.
#include "layers/profiler.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace cnn {

namespace {

void collect_paths(const Module& m, const std::string& path,
                   std::map<const void*, std::pair<std::string, std::string>>& out) {
  out[&m] = {path, m.type_name()};
  for (const auto& [name, child] : m.named_children())
    collect_paths(*child, path.empty() ? name : path + "." + name, out);
}

std::string pct(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

void sort_by_total(std::vector<ProfileRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.total_ms() > b.total_ms(); });
}

}  // namespace

StepProfiler::StepProfiler(const Module& root, Device device) : timeline_(device) {
  collect_paths(root, "", modules_);
  modules_[&root].first = root.type_name();  // the root's own ops, under its type name
}

int StepProfiler::key(Phase phase, const std::string& op, const std::string& layer) {
  const auto k = std::make_tuple(int(phase), op, layer);
  auto it = key_index_.find(k);
  if (it != key_index_.end()) return it->second;
  const int id = int(keys_.size());
  keys_.push_back({phase, op, layer});
  key_ms_.push_back(0.0);
  key_calls_.push_back(0);
  key_index_.emplace(k, id);
  return id;
}

void StepProfiler::end_segment(int k) {
  CNN_CHECK(in_step_, "StepProfiler: work observed outside begin_step() / end_step()");
  timeline_.mark();
  segment_keys_.push_back(k);
}

const std::string& StepProfiler::current_layer() const {
  static const std::string no_module = kNoModule;
  if (scopes_.empty()) return no_module;
  auto it = modules_.find(scopes_.back());
  CNN_CHECK(it != modules_.end(), "StepProfiler: a module outside the profiled model ran on the profiled tape");
  return it->second.first;
}

void StepProfiler::begin_step() {
  CNN_CHECK(!in_step_, "StepProfiler::begin_step: the previous step was not ended");
  in_step_ = true;
  scopes_.clear();
  segment_keys_.clear();
  timeline_.clear();
  timeline_.mark();
}

void StepProfiler::mark(const std::string& label) { end_segment(key(Phase::other, label, kOutside)); }

void StepProfiler::end_step() {
  mark("step end");
  in_step_ = false;
  const std::vector<double> gaps = timeline_.intervals_ms();
  CNN_CHECK(gaps.size() == segment_keys_.size(), "StepProfiler: ", gaps.size(), " timed gaps for ",
            segment_keys_.size(), " segments");
  for (size_t i = 0; i < gaps.size(); ++i) {
    key_ms_[size_t(segment_keys_[i])] += gaps[i];
    ++key_calls_[size_t(segment_keys_[i])];
    total_ms_ += gaps[i];
  }
  ++steps_;
}

void StepProfiler::on_scope_begin(const void* scope) { scopes_.push_back(scope); }

void StepProfiler::on_scope_end(const void* scope) {
  CNN_CHECK(!scopes_.empty() && scopes_.back() == scope, "StepProfiler: module scopes closed out of order");
  scopes_.pop_back();
}

int StepProfiler::on_record(const char* op) {
  const std::string& layer = current_layer();
  end_segment(key(Phase::forward, op, layer));
  return key(Phase::backward, op, layer);  // the node's tag: where its backward time goes
}

void StepProfiler::on_backward_begin() { end_segment(key(Phase::forward, "(after the last op)", kNoModule)); }
void StepProfiler::on_node_begin(const std::string&, int) { end_segment(key(Phase::backward, kAccumulate, kAutograd)); }
void StepProfiler::on_node_end(const std::string&, int tag) { end_segment(tag); }
void StepProfiler::on_backward_end() { end_segment(key(Phase::backward, kAccumulate, kAutograd)); }

StepProfile StepProfiler::summary() const {
  StepProfile p;
  p.steps = steps_;
  if (steps_ == 0) return p;
  const double n = double(steps_);
  p.step_ms = total_ms_ / n;
  std::map<std::string, ProfileRow> ops, caller, layers;
  std::map<std::string, std::string> layer_types;
  for (const auto& [addr, path_type] : modules_) layer_types[path_type.first] = path_type.second;
  for (size_t i = 0; i < keys_.size(); ++i) {
    const Key& k = keys_[i];
    const double ms = key_ms_[i] / n, calls = double(key_calls_[i]) / n;
    ProfileRow& op = (k.phase == Phase::other ? caller : ops)[k.op];
    ProfileRow& layer = layers[k.layer];
    op.name = k.op;
    layer.name = k.layer;
    double ProfileRow::*slot = k.phase == Phase::forward    ? &ProfileRow::forward_ms
                               : k.phase == Phase::backward ? &ProfileRow::backward_ms
                                                            : &ProfileRow::other_ms;
    op.*slot += ms;
    layer.*slot += ms;
    op.calls += calls;
    if (k.phase != Phase::backward) layer.calls += calls;  // a layer's calls: its forward ops
    (k.phase == Phase::forward ? p.forward_ms : k.phase == Phase::backward ? p.backward_ms : p.other_ms) += ms;
  }
  for (auto& [name, row] : ops) p.ops.push_back(row);
  sort_by_total(p.ops);
  std::vector<ProfileRow> tail;
  for (auto& [name, row] : caller) tail.push_back(row);
  sort_by_total(tail);
  p.ops.insert(p.ops.end(), tail.begin(), tail.end());
  std::map<std::string, ProfileRow> types;
  for (auto& [name, row] : layers) {
    auto t = layer_types.find(name);
    row.type = t != layer_types.end() ? t->second : "";
    p.layers.push_back(row);
    ProfileRow& type = types[row.type.empty() ? row.name : row.type];  // "(autograd)" etc. stand for themselves
    type.name = row.type.empty() ? row.name : row.type;
    type.forward_ms += row.forward_ms, type.backward_ms += row.backward_ms, type.other_ms += row.other_ms;
    type.calls += row.calls;
  }
  sort_by_total(p.layers);
  for (auto& [name, row] : types) p.types.push_back(row);
  sort_by_total(p.types);
  return p;
}

std::string format_profile(const StepProfile& p, size_t max_layers) {
  std::string out;
  char buf[320];
  auto line = [&](const char* name, const char* type, double f, double b, double o, double total, double calls) {
    std::snprintf(buf, sizeof buf, "  %-34s %-18s %10.3f %10.3f %10.3f %10.3f %7s %9.1f\n", name, type, f, b, o, total,
                  pct(total, p.step_ms).c_str(), calls);
    out += buf;
  };
  auto header = [&](const char* first, const char* second) {
    std::snprintf(buf, sizeof buf, "  %-34s %-18s %10s %10s %10s %10s %7s %9s\n", first, second, "fwd ms", "bwd ms",
                  "other ms", "total ms", "% step", "calls");
    out += buf;
  };
  std::snprintf(buf, sizeof buf,
                "step %.3f ms (mean of %lld profiled steps): forward %.3f ms (%s), backward %.3f ms (%s), "
                "outside forward/backward %.3f ms (%s)\n",
                p.step_ms, (long long)p.steps, p.forward_ms, pct(p.forward_ms, p.step_ms).c_str(), p.backward_ms,
                pct(p.backward_ms, p.step_ms).c_str(), p.other_ms, pct(p.other_ms, p.step_ms).c_str());
  out += buf;
  out += "by op kind (per step; calls = segments per step):\n";
  header("op", "");
  for (const ProfileRow& r : p.ops)
    line(r.name.c_str(), "", r.forward_ms, r.backward_ms, r.other_ms, r.total_ms(), r.calls);
  out += "by module type (the layers of each type summed):\n";
  header("type", "");
  for (const ProfileRow& r : p.types)
    line(r.name.c_str(), "", r.forward_ms, r.backward_ms, r.other_ms, r.total_ms(), r.calls);
  const size_t shown = std::min(max_layers, p.layers.size());
  std::snprintf(buf, sizeof buf, "by layer (the %zu most expensive of %zu; calls = forward ops per step):\n", shown,
                p.layers.size());
  out += buf;
  header("layer", "type");
  double rest_f = 0, rest_b = 0, rest_o = 0, rest_calls = 0;
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const ProfileRow& r = p.layers[i];
    if (i < shown) {
      line(r.name.c_str(), r.type.c_str(), r.forward_ms, r.backward_ms, r.other_ms, r.total_ms(), r.calls);
    } else {
      rest_f += r.forward_ms, rest_b += r.backward_ms, rest_o += r.other_ms, rest_calls += r.calls;
    }
  }
  if (shown < p.layers.size()) {
    const std::string name = str_cat("(", p.layers.size() - shown, " more layers)");
    line(name.c_str(), "", rest_f, rest_b, rest_o, rest_f + rest_b + rest_o, rest_calls);
  }
  return out;
}

}  // namespace cnn
