// Key components by name, how two jobs' components differ, and a missing
// job against the nearest cached one.
#include "core/explain.h"

#include "core/keys.h"

#include <algorithm>
#include <iterator>

namespace kiln::core {

std::vector<NamedComponent> named_components(const JobRecord& j) {
  auto c = components_of(j.module_hash.hex(), j.entry, j.target, j.triple, j.cpu, j.features,
                         j.options, j.toolchain);
  std::string opt = c ? std::to_string(c->identity.options.opt_level) : j.options;
  std::string debug = c ? (c->identity.options.debug ? "true" : "false") : j.options;
  return {{"module_hash", j.module_hash.hex()}, {"entry", j.entry}, {"target", j.target},
          {"triple", j.triple}, {"cpu", j.cpu}, {"features", j.features},
          {"opt_level", opt}, {"debug", debug}, {"toolchain", j.toolchain}};
}

std::vector<KeyDifference> compare_keys(const JobRecord& a, const JobRecord& b) {
  std::vector<NamedComponent> ca = named_components(a), cb = named_components(b);
  std::vector<KeyDifference> out;
  for (size_t i = 0; i < ca.size(); ++i)
    if (ca[i].value != cb[i].value)
      out.push_back({ca[i].name, ca[i].value, cb[i].value});
  return out;
}

std::string_view component_area(std::string_view c) {
  if (c == "module_hash")
    return "the input (module hash)";
  if (c == "target" || c == "triple")
    return "target";
  if (c == "cpu" || c == "features")
    return "CPU/features";
  if (c == "opt_level" || c == "debug")
    return "options";
  if (c == "toolchain")
    return "toolchain version";
  return c;
}

MissExplanation explain_miss(const JobRecord& wanted, const std::vector<JobRecord>& cached) {
  MissExplanation best;
  // Same target first: a job cached only for another target explains less.
  for (bool same_target : {true, false}) {
    for (const JobRecord& c : cached) {
      if (c.entry != wanted.entry || (same_target && c.target != wanted.target))
        continue;
      std::vector<KeyDifference> d = compare_keys(wanted, c);
      if (!best.nearest || d.size() < best.differences.size()) {
        best.nearest = c;
        best.differences = std::move(d);
      }
    }
    if (best.nearest)
      break;
  }
  return best;
}

namespace {

std::vector<std::string> split_features(const std::string& list) {
  std::vector<std::string> out;
  for (size_t at = 0; at < list.size();) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos)
      comma = list.size();
    if (comma > at)
      out.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Feature strings run to a hundred entries: name only those that differ.
std::string feature_difference(const std::string& wanted, const std::string& cached) {
  std::vector<std::string> w = split_features(wanted), c = split_features(cached), only_w, only_c;
  std::set_difference(w.begin(), w.end(), c.begin(), c.end(), std::back_inserter(only_w));
  std::set_difference(c.begin(), c.end(), w.begin(), w.end(), std::back_inserter(only_c));
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& f : v)
      out += (out.empty() ? "" : ",") + f;
    return out.empty() ? std::string("none") : out;
  };
  return "wanted only " + join(only_w) + ", cached only " + join(only_c);
}

} // namespace

std::string describe_miss(const JobRecord& wanted, const MissExplanation& miss) {
  if (!miss.nearest)
    return "no cached job for entry '" + wanted.entry + "' on any target";
  std::string out = "the nearest cached job " + miss.nearest->key.hex() + " (target " +
                    miss.nearest->target + ")";
  if (miss.differences.empty())
    return out + " has the same key components";
  std::vector<std::string_view> areas;
  for (const KeyDifference& d : miss.differences) {
    std::string_view area = component_area(d.component);
    if (std::find(areas.begin(), areas.end(), area) == areas.end())
      areas.push_back(area);
  }
  out += " differs in ";
  for (size_t i = 0; i < areas.size(); ++i)
    out += (i ? ", " : "") + std::string(areas[i]);
  out += ":";
  for (size_t i = 0; i < miss.differences.size(); ++i) {
    const KeyDifference& d = miss.differences[i];
    out += (i ? "; " : " ") + d.component + " " +
           (d.component == "features" ? feature_difference(d.a, d.b)
                                      : d.a + " wanted, " + d.b + " cached");
  }
  return out;
}

} // namespace kiln::core
