// The admin views as JSON (kiln/admin.hpp to_json): what kiln-inspect --json
// prints and the C API (kiln/admin.h) returns, one rendering for both.
// Strings are written as kiln/text.hpp says.
#include <kiln/admin.hpp>
#include <kiln/text.hpp>

#include <nlohmann/json.hpp>

namespace kiln::admin {

namespace {

using json = nlohmann::ordered_json;

std::string text(json j) { return kiln::text::json_text(std::move(j)); }

json artifacts_json(const std::vector<Artifact>& arts) {
  json a = json::array();
  for (const auto& x : arts)
    a.push_back({{"format", x.format}, {"raw_size", x.raw_size}, {"stored_size", x.stored_size}});
  return a;
}

json refs_json(const std::vector<Reference>& refs) {
  json a = json::array();
  for (const auto& r : refs)
    a.push_back({{"symbol", r.symbol}, {"entry", r.entry}});
  return a;
}

json members_json(const std::vector<Member>& members) {
  json a = json::array();
  for (const auto& m : members)
    a.push_back({{"symbol", m.symbol}, {"entry", m.entry}, {"key", m.key}});
  return a;
}

json portability_json(const Portability& r) {
  json closures = json::array();
  for (const auto& c : r.closures)
    closures.push_back({{"closure", c.closure},
                        {"target", c.target},
                        {"names", c.names},
                        {"cpu", c.cpu},
                        {"loadable", c.loadable},
                        {"component", c.component},
                        {"reason", c.reason},
                        {"missing_features", c.missing},
                        {"unknown_features", c.unknown}});
  return json{{"closures", r.closures.size()},
              {"loadable", r.loadable},
              {"not_loadable", r.closures.size() - r.loadable},
              {"details", closures}};
}

} // namespace

std::string to_json(const Listing& v) {
  json out;
  out["jobs"] = json::array();
  // A job whose artifacts or references could not be read has none here:
  // the callers that print JSON report such a listing as an error.
  for (const auto& lj : v.jobs) {
    const Job& r = lj.job;
    out["jobs"].push_back({{"key", r.key},
                           {"entry", r.entry},
                           {"target", r.target},
                           {"options", r.options},
                           {"artifacts", artifacts_json(lj.artifacts ? *lj.artifacts
                                                                     : std::vector<Artifact>{})},
                           {"refs", refs_json(lj.refs ? *lj.refs : std::vector<Reference>{})}});
  }
  out["names"] = json::array();
  for (const auto& n : v.names)
    out["names"].push_back({{"name", n.name}, {"target", n.target}, {"closure", n.closure}});
  return text(std::move(out));
}

std::string to_json(const Entry& v) {
  if (const Job* j = std::get_if<Job>(&v))
    return text(json{{"kind", "job"},
                     {"key", j->key},
                     {"entry", j->entry},
                     {"target", j->target},
                     {"options", j->options},
                     {"toolchain", j->toolchain},
                     {"module_hash", j->module_hash},
                     {"symbol", j->symbol},
                     {"triple", j->triple},
                     {"cpu", j->cpu},
                     {"compile_ms", j->compile_ms},
                     {"artifacts", artifacts_json(j->artifacts)},
                     {"refs", refs_json(j->refs)}});
  const Root& r = std::get<Root>(v);
  return text(json{{"kind", "root"},
                   {"name", r.name},
                   {"target", r.target},
                   {"closure", r.closure},
                   {"root_job", r.root_job},
                   {"unit", r.unit},
                   {"members", members_json(r.members)}});
}

std::string to_json(const Graph& v) {
  json nodes = json::array(), edges = json::array();
  for (const auto& m : v.members)
    nodes.push_back({{"key", m.key}, {"entry", m.entry}, {"symbol", m.symbol}});
  for (const auto& e : v.edges)
    edges.push_back({{"from", e.from}, {"to", e.to}, {"symbol", e.symbol}});
  return text(json{{"closure", v.closure},
                   {"root", v.root_job},
                   {"target", v.target},
                   {"nodes", nodes},
                   {"edges", edges}});
}

std::string to_json(const std::vector<Library>& v) {
  json out = json::array();
  for (const auto& l : v)
    out.push_back({{"name", l.name},
                   {"target", l.target},
                   {"closure", l.closure},
                   {"roots", l.roots.size()}});
  return text(std::move(out));
}

std::string to_json(const Library& v) {
  return text(json{{"kind", "library"},
                   {"name", v.name},
                   {"target", v.target},
                   {"closure", v.closure},
                   {"roots", v.roots},
                   {"members", members_json(v.members)},
                   {"images", v.images}});
}

std::string to_json(const ExportedImage& v) {
  return text(json{{"closure", v.closure},
                   {"target", v.target},
                   {"path", v.path},
                   {"members", v.members},
                   {"bytes", v.bytes}});
}

std::string to_json(const Stats& v) {
  json targets = json::object();
  for (const auto& [t, n] : v.jobs_per_target)
    targets[t] = n;
  const Counters& c = v.counters;
  return text(json{{"jobs", v.jobs},
                   {"closures", v.closures},
                   {"images", v.images},
                   {"names", v.names},
                   {"stored_bytes", v.stored_bytes},
                   {"raw_bytes", v.raw_bytes},
                   {"ratio", v.ratio},
                   {"file_bytes", v.file_bytes},
                   {"live_bytes", v.live_bytes},
                   {"max_size", v.max_size},
                   {"targets", targets},
                   {"job_hits", c.job_hits},
                   {"job_misses", c.job_misses},
                   {"image_hits", c.image_hits},
                   {"image_misses", c.image_misses},
                   {"loads", c.loads},
                   {"remote_hits", c.remote_hits},
                   {"remote_misses", c.remote_misses},
                   {"remote_bytes_in", c.remote_bytes_in},
                   {"remote_bytes_out", c.remote_bytes_out},
                   {"remote_errors", c.remote_errors}});
}

std::string to_json(const VerifyReport& v) {
  json problems = json::array();
  for (const auto& p : v.problems)
    problems.push_back({{"kind", p.kind}, {"key", p.key}, {"message", p.message}});
  return text(json{{"ok", v.ok()},
                   {"jobs", v.jobs},
                   {"closures", v.closures},
                   {"schema", v.schema},
                   {"problems", problems}});
}

std::string to_json(const GcReport& v) {
  return text(json{{"dry_run", v.dry_run},
                   {"evicted_closures", v.evicted_closures},
                   {"evicted_jobs", v.evicted_jobs},
                   {"evicted_images", v.evicted_images},
                   {"dropped_key_form_names", v.dropped_key_form_names},
                   {"bytes_before", v.bytes_before},
                   {"bytes_after", v.bytes_after}});
}

std::string to_json(const BundleSummary& v) {
  json out{{"closures", v.closures}, {"jobs", v.jobs}, {"images", v.images}, {"names", v.names}};
  if (v.exported)
    out["bytes"] = v.bytes;
  return text(std::move(out));
}

std::string to_json(const Portability& v) { return text(portability_json(v)); }

std::string to_json(const Explanation& v) {
  json ds = json::array();
  for (const auto& d : v.differences)
    ds.push_back({{"component", d.component}, {"a", d.a}, {"b", d.b}});
  return text(
      json{{"a", v.a}, {"b", v.b}, {"same", v.differences.empty()}, {"differences", ds}});
}

std::string to_json(const Settings& v) {
  return text(json{{"max_size", v.max_size},
                   {"max_size_source", v.max_size_source},
                   {"require_signed", v.require_signed},
                   {"require_signed_source", v.require_signed_source}});
}

} // namespace kiln::admin
