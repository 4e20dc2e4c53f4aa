// kiln-inspect: what is in a Kiln cache. Reads only (but for gc, import,
// config set and stats --zero, which a read-only cache refuses); never needs
// LLVM. Exit statuses: tools/exit_status.h; with --json, a failure is one JSON
// object on stdout with an "error" and the "exit_status". Each subcommand is
// one library call: this file parses arguments and prints, in text or JSON.
// Names, targets, paths and messages are written as tools/safe_text.h says
// (JSON that keeps every byte; text with control bytes escaped).
#include "exit_status.h"
#include "safe_text.h"

#include "image/export.h"
#include "runtime/portable.h"
#include "storage/local/catalog.h"
#include "storage/local/gc.h"
#include "storage/local/store.h"
#include "storage/local/transfer.h"
#include "storage/local/usage.h"
#include "storage/signing.h"
#include "storage/local/verify.h"
#include "support/files.h"
#include "support/units.h"

#include <map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace {

using kiln::human_size;
using kiln::storage::Store;
using json = nlohmann::ordered_json;
using kiln::tools::kExitUsage;
using kiln::tools::shown;

/// `j` on stdout as one line of JSON (tools/safe_text.h).
void print_json(json j) { std::cout << kiln::tools::json_text(std::move(j)) << "\n"; }

json artifacts_json(const std::vector<kiln::core::ArtifactInfo>& arts) {
  json a = json::array();
  for (const auto& x : arts)
    a.push_back({{"format", x.format}, {"raw_size", x.raw_size}, {"stored_size", x.stored_size}});
  return a;
}

json refs_json(const std::vector<kiln::core::JobRef>& refs) {
  json a = json::array();
  for (const auto& r : refs)
    a.push_back({{"symbol", r.symbol}, {"entry", r.entry}});
  return a;
}

// Whether the command line has --json, so errors are JSON too: set once in
// main, before any command runs.
bool g_json_errors = false;

int report(const kiln::Error& e, int status) {
  return kiln::tools::report_error("kiln-inspect", e, status, g_json_errors);
}

int report(const kiln::Error& e) { return report(e, kiln::tools::exit_status(e)); }

int usage_error(const kiln::Error& e) { return report(e, kExitUsage); }

int cmd_ls(Store& store, bool as_json, const std::string& target, const std::string& glob) {
  auto listing = kiln::storage::list_cache(store, {target, glob});
  if (!listing)
    return report(listing.error());
  if (as_json) {
    json out;
    out["jobs"] = json::array();
    for (const auto& j : listing->jobs) {
      if (!j.artifacts)
        return report(j.artifacts.error());
      if (!j.refs)
        return report(j.refs.error());
      const kiln::core::JobRecord& r = j.record;
      out["jobs"].push_back({{"key", r.key.hex()},
                             {"entry", r.entry},
                             {"target", r.target},
                             {"options", r.options},
                             {"artifacts", artifacts_json(*j.artifacts)},
                             {"refs", refs_json(*j.refs)}});
    }
    out["names"] = json::array();
    for (const auto& n : listing->names)
      out["names"].push_back({{"name", n.name}, {"target", n.target}, {"closure", n.closure.hex()}});
    print_json(std::move(out));
    return 0;
  }
  // The target column is as wide as its longest spec ("host:x86-64-v3",
  // "gfx942:sramecc+:xnack-"), and never narrower than 8.
  int tw = 8;
  for (const auto& j : listing->jobs)
    tw = std::max(tw, int(shown(j.record.target).size()));
  for (const auto& n : listing->names)
    tw = std::max(tw, int(shown(n.target).size()));
  std::printf("%-32s  %-*s  %-6s  %10s  %4s  %s\n", "KEY", tw, "TARGET", "OPTS", "STORED", "REFS",
              "ENTRY");
  // A job whose artifacts or references cannot be read still gets its row.
  for (const auto& j : listing->jobs) {
    int64_t stored = 0;
    if (j.artifacts)
      for (const auto& a : *j.artifacts)
        stored += a.stored_size;
    const kiln::core::JobRecord& r = j.record;
    std::printf("%-32s  %-*s  %-6s  %10s  %4zu  %s\n", r.key.hex().c_str(), tw,
                shown(r.target).c_str(), shown(r.options).c_str(), human_size(stored).c_str(),
                j.refs ? j.refs->size() : size_t(0), shown(r.entry).c_str());
  }
  if (!listing->names.empty()) {
    std::printf("\n%-24s  %-*s  %s\n", "NAME", tw, "TARGET", "CLOSURE");
    for (const auto& n : listing->names)
      std::printf("%-24s  %-*s  %s\n", shown(n.name).c_str(), tw, shown(n.target).c_str(),
                  n.closure.hex().c_str());
  }
  return 0;
}

int show_job(const kiln::storage::JobDetail& d, bool as_json) {
  const kiln::core::JobRecord& j = d.record;
  if (as_json) {
    json out{{"kind", "job"},         {"key", j.key.hex()},
             {"entry", j.entry},      {"target", j.target},
             {"options", j.options},  {"toolchain", j.toolchain},
             {"module_hash", j.module_hash.hex()}, {"symbol", j.symbol},
             {"triple", j.triple},    {"cpu", j.cpu},
             {"compile_ms", j.compile_ms}, {"artifacts", artifacts_json(d.artifacts)},
             {"refs", refs_json(d.refs)}};
    print_json(std::move(out));
    return 0;
  }
  std::printf("job         %s\nentry       %s\ntarget      %s (%s, %s)\noptions     %s\n"
              "toolchain   %s\nmodule hash %s\nsymbol      %s\ncompile     %.1f ms\n",
              j.key.hex().c_str(), shown(j.entry).c_str(), shown(j.target).c_str(),
              shown(j.triple).c_str(), shown(j.cpu).c_str(), shown(j.options).c_str(),
              shown(j.toolchain).c_str(), j.module_hash.hex().c_str(), shown(j.symbol).c_str(),
              j.compile_ms);
  for (const auto& a : d.artifacts)
    std::printf("artifact    %-6s %s raw, %s stored\n", shown(a.format).c_str(),
                human_size(a.raw_size).c_str(), human_size(a.stored_size).c_str());
  for (const auto& r : d.refs)
    std::printf("deferred    %s -> %s\n", shown(r.symbol).c_str(), shown(r.entry).c_str());
  return 0;
}

int show_root(const kiln::storage::RootDetail& root, bool as_json) {
  const kiln::core::ClosureRecord& closure = root.closure;
  if (as_json) {
    json members = json::array();
    for (const auto& m : closure.members)
      members.push_back({{"symbol", m.symbol}, {"entry", m.entry}, {"key", m.job.hex()}});
    json out{{"kind", "root"},
             {"name", root.name},
             {"target", root.target},
             {"closure", closure.key.hex()},
             {"root_job", closure.root_job.hex()},
             {"unit", root.unit},
             {"members", members}};
    print_json(std::move(out));
    return 0;
  }
  std::printf("root        %s\ntarget      %s\nclosure     %s\nroot job    %s\nmembers     %zu\n",
              shown(root.name).c_str(), shown(root.target).c_str(), closure.key.hex().c_str(),
              closure.root_job.hex().c_str(), closure.members.size());
  if (!root.name.empty())
    std::printf("unit        %s\n", root.unit.empty() ? "(unknown)" : shown(root.unit).c_str());
  for (const auto& m : closure.members)
    std::printf("  %-32s  %s  %s\n", m.job.hex().c_str(), shown(m.symbol).c_str(),
                shown(m.entry).c_str());
  return 0;
}

int cmd_show(Store& store, const std::string& what, const std::string& target, bool as_json) {
  auto found = kiln::storage::find_entry(store, what, target);
  if (!found)
    return report(found.error());
  if (const auto* job = std::get_if<kiln::storage::JobDetail>(&*found))
    return show_job(*job, as_json);
  return show_root(std::get<kiln::storage::RootDetail>(*found), as_json);
}

int cmd_image(Store& store, const std::string& what, const std::string& target,
              const std::string& out_path) {
  auto image = kiln::image::export_image(store, what, target, out_path);
  if (!image)
    return report(image.error());
  std::fprintf(stderr, "kiln-inspect: wrote the %s image of closure %s (%zu bytes) to %s\n",
               shown(image->closure.target).c_str(), image->closure.key.hex().c_str(), image->bytes,
               shown(out_path).c_str());
  return 0;
}

int cmd_libraries(Store& store, bool as_json) {
  auto libs = store.list_libraries();
  if (!libs)
    return report(libs.error());
  if (as_json) {
    json out = json::array();
    for (const auto& l : *libs)
      out.push_back({{"name", l.name},
                     {"target", l.target},
                     {"closure", l.closure.hex()},
                     {"roots", l.roots.size()}});
    print_json(std::move(out));
    return 0;
  }
  for (const auto& l : *libs)
    std::printf("%-24s %-12s %s  %zu roots\n", shown(l.name).c_str(), shown(l.target).c_str(),
                l.closure.hex().c_str(), l.roots.size());
  return 0;
}

int cmd_library(Store& store, const std::string& name, std::string target,
                const std::string& out_path, bool as_json) {
  if (target.empty()) {
    auto libs = store.list_libraries(name);
    if (!libs)
      return report(libs.error());
    if (libs->empty())
      return report(kiln::make_error(kiln::Code::not_found, "no library named '" + name +
                                                                 "' in cache '" + store.path() +
                                                                 "'"));
    target = libs->front().target;
  }
  if (!out_path.empty()) {
    auto image = kiln::image::export_library_image(store, name, target, out_path);
    if (!image)
      return report(image.error());
    std::fprintf(stderr,
                 "kiln-inspect: wrote the %s image of library %s (closure %s, %zu jobs, %zu "
                 "bytes) to %s\n",
                 shown(target).c_str(), shown(name).c_str(), image->closure.key.hex().c_str(),
                 image->closure.members.size(), image->bytes, shown(out_path).c_str());
    return 0;
  }
  auto lib = store.get_library(name, target);
  if (!lib)
    return report(lib.error());
  auto closure = store.get_closure(lib->closure);
  if (!closure)
    return report(closure.error().context("library '" + name + "' (" + target + ")"));
  auto images = store.images_of(lib->closure);
  size_t image_count = images ? images->size() : 0;
  if (as_json) {
    json members = json::array();
    for (const auto& m : closure->members)
      members.push_back({{"symbol", m.symbol}, {"entry", m.entry}, {"key", m.job.hex()}});
    json out{{"kind", "library"},     {"name", name},
             {"target", target},      {"closure", lib->closure.hex()},
             {"roots", lib->roots},   {"members", members},
             {"images", image_count}};
    print_json(std::move(out));
    return 0;
  }
  std::printf("library     %s\ntarget      %s\nclosure     %s\nroots       %zu\nmembers     "
              "%zu\nimages      %zu\n",
              shown(name).c_str(), shown(target).c_str(), lib->closure.hex().c_str(),
              lib->roots.size(), closure->members.size(), image_count);
  for (const std::string& r : lib->roots)
    std::printf("  root %s\n", shown(r).c_str());
  for (const auto& m : closure->members)
    std::printf("  %-32s  %s  %s\n", m.job.hex().c_str(), shown(m.symbol).c_str(),
                shown(m.entry).c_str());
  return 0;
}

int cmd_dump(Store& store, const std::string& what, const std::string& format) {
  auto bytes = kiln::storage::dump_artifact(store, what, format);
  if (!bytes)
    return report(bytes.error());
  std::fwrite(bytes->data(), 1, bytes->size(), stdout);
  return 0;
}

int cmd_stats(Store& store, bool as_json, bool zero) {
  auto rep = kiln::storage::stats_report(store, zero);
  if (!rep)
    return report(rep.error());
  const kiln::storage::Stats& st = rep->stats;
  const kiln::storage::Counters& c = st.counters;
  double ratio = st.compression_ratio();
  if (as_json) {
    json targets = json::object();
    for (const auto& [t, n] : st.jobs_per_target)
      targets[t] = n;
    json out{{"jobs", st.jobs},
             {"closures", st.closures},
             {"images", st.images},
             {"names", st.names},
             {"stored_bytes", st.stored_bytes},
             {"raw_bytes", st.raw_bytes},
             {"ratio", ratio},
             {"file_bytes", st.file_bytes},
             {"live_bytes", st.live_bytes},
             {"max_size", rep->max_size},
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
             {"remote_errors", c.remote_errors}};
    print_json(std::move(out));
    return 0;
  }
  std::printf("cache          %s\n", shown(store.path()).c_str());
  std::printf("jobs           %lld\n", static_cast<long long>(st.jobs));
  for (const auto& [t, n] : st.jobs_per_target)
    std::printf("  %-12s %lld\n", shown(t).c_str(), static_cast<long long>(n));
  std::printf("closures       %lld\nimages         %lld\nnames          %lld\n",
              static_cast<long long>(st.closures), static_cast<long long>(st.images),
              static_cast<long long>(st.names));
  std::printf("stored         %s of %s raw (compression ratio %.2f)\n",
              human_size(st.stored_bytes).c_str(), human_size(st.raw_bytes).c_str(), ratio);
  std::printf("file           %s (%s in use), limit %s\n", human_size(st.file_bytes).c_str(),
              human_size(st.live_bytes).c_str(), human_size(rep->max_size).c_str());
  std::printf("precompile     %lld cached, %lld compiled\n", static_cast<long long>(c.job_hits),
              static_cast<long long>(c.job_misses));
  std::printf("loads          %lld (%lld from a stored image, %lld linked)\n",
              static_cast<long long>(c.loads), static_cast<long long>(c.image_hits),
              static_cast<long long>(c.image_misses));
  if (c.remote_hits || c.remote_misses || c.remote_errors || c.remote_bytes_out)
    std::printf("remote         %lld hits, %lld misses, %s in, %s out, %lld errors\n",
                static_cast<long long>(c.remote_hits), static_cast<long long>(c.remote_misses),
                human_size(c.remote_bytes_in).c_str(), human_size(c.remote_bytes_out).c_str(),
                static_cast<long long>(c.remote_errors));
  return 0;
}

int cmd_graph(Store& store, const std::string& what, const std::string& target, bool as_json,
              bool dot) {
  auto graph = kiln::storage::closure_graph(store, what, target);
  if (!graph)
    return report(graph.error());
  const kiln::core::ClosureRecord& closure = graph->closure;
  const auto& edges = graph->edges;
  if (as_json) {
    json nodes = json::array(), es = json::array();
    for (const auto& m : closure.members)
      nodes.push_back({{"key", m.job.hex()}, {"entry", m.entry}, {"symbol", m.symbol}});
    for (const auto& e : edges)
      es.push_back({{"from", e.from.hex()}, {"to", e.to.hex()}, {"symbol", e.symbol}});
    print_json(json{{"closure", closure.key.hex()},
                    {"root", closure.root_job.hex()},
                    {"target", closure.target},
                    {"nodes", nodes},
                    {"edges", es}});
    return 0;
  }
  if (dot) {
    // Labels: entry and short key; the root is drawn bold; an edge back to a
    // node already on the path draws the cycle as it is.
    std::printf("digraph kiln {\n  label=\"closure %s (%s)\";\n  node [shape=box, "
                "fontname=\"monospace\"];\n",
                closure.key.short_hex().c_str(), kiln::tools::dot_quoted(closure.target).c_str());
    for (const auto& m : closure.members) {
      std::printf("  \"%s\" [label=\"%s\\n%s\"%s];\n", m.job.hex().c_str(),
                  kiln::tools::dot_quoted(m.entry).c_str(),
                  m.job.short_hex(8).c_str(), m.job == closure.root_job ? ", style=bold" : "");
    }
    for (const auto& e : edges)
      std::printf("  \"%s\" -> \"%s\";\n", e.from.hex().c_str(), e.to.hex().c_str());
    std::printf("}\n");
    return 0;
  }
  std::printf("closure %s (%s), %zu jobs, %zu deferred references\n", closure.key.hex().c_str(),
              shown(closure.target).c_str(), closure.members.size(), edges.size());
  std::map<std::string, std::string> entry_of;
  for (const auto& m : closure.members)
    entry_of[m.job.hex()] = m.entry;
  for (const auto& m : closure.members) {
    std::printf("  %s %s%s\n", m.job.short_hex().c_str(), shown(m.entry).c_str(),
                m.job == closure.root_job ? "  (root)" : "");
    for (const auto& e : edges)
      if (e.from == m.job)
        std::printf("    -> %s %s\n", e.to.short_hex().c_str(),
                    shown(entry_of[e.to.hex()]).c_str());
  }
  return 0;
}

int cmd_verify(Store& store, bool as_json) {
  auto rep = kiln::storage::verify_cache(store);
  if (!rep)
    return report(rep.error());
  const auto& problems = rep->problems;
  if (as_json) {
    json ps = json::array();
    for (const auto& p : problems)
      ps.push_back({{"kind", p.kind}, {"key", p.key}, {"message", p.message}});
    print_json(json{{"ok", rep->ok()},
                    {"jobs", rep->jobs},
                    {"closures", rep->closures},
                    {"schema", kiln::storage::schema_version()},
                    {"problems", ps}});
  } else if (rep->ok()) {
    std::printf("ok: %zu jobs, %zu closures, schema %d\n", rep->jobs, rep->closures,
                kiln::storage::schema_version());
  } else {
    for (const auto& p : problems)
      std::printf("%-8s %s  %s\n", shown(p.kind).c_str(), shown(p.key).c_str(),
                  kiln::tools::shown_message(p.message).c_str());
    std::printf("%zu problem(s)\n", problems.size());
  }
  return rep->ok() ? 0 : 1;
}

int cmd_gc(Store& store, const std::string& max_size, const std::string& older_than,
           bool dry_run, bool as_json) {
  auto policy = kiln::storage::parse_gc_policy(max_size, older_than);
  if (!policy)
    return usage_error(policy.error());
  policy->dry_run = dry_run;
  auto rep = kiln::storage::collect_garbage(store, *policy);
  if (!rep)
    return report(rep.error());
  if (as_json) {
    json evicted = json::array();
    for (const auto& k : rep->evicted_closures)
      evicted.push_back(k.hex());
    print_json(json{{"dry_run", dry_run},
                    {"evicted_closures", evicted},
                    {"evicted_jobs", rep->evicted_jobs},
                    {"evicted_images", rep->evicted_images},
                    {"dropped_key_form_names", rep->dropped_key_form_names},
                    {"bytes_before", rep->bytes_before},
                    {"bytes_after", rep->bytes_after}});
    return 0;
  }
  std::printf("%s%zu closures, %lld jobs, %lld images; %s -> %s in use\n",
              dry_run ? "would evict " : "evicted ", rep->evicted_closures.size(),
              static_cast<long long>(rep->evicted_jobs),
              static_cast<long long>(rep->evicted_images), human_size(rep->bytes_before).c_str(),
              human_size(rep->bytes_after).c_str());
  if (rep->dropped_key_form_names > 0)
    std::printf("%s %lld name or library rows of key form (never consulted)\n",
                dry_run ? "would drop" : "dropped",
                static_cast<long long>(rep->dropped_key_form_names));
  return 0;
}

int cmd_export(Store& store, const std::string& file, const std::vector<std::string>& which,
               bool as_json) {
  auto sum = kiln::storage::export_bundle(store, file, which);
  if (!sum)
    return report(sum.error());
  if (as_json)
    print_json(json{{"closures", sum->closures}, {"jobs", sum->jobs},
                    {"images", sum->images}, {"names", sum->names},
                    {"bytes", sum->bytes}});
  else
    std::printf("exported %zu closures, %zu jobs, %zu images, %zu names to %s (%s)\n",
                sum->closures, sum->jobs, sum->images, sum->names, shown(file).c_str(),
                human_size(int64_t(sum->bytes)).c_str());
  return 0;
}

int cmd_import(Store& store, const std::string& file, bool as_json) {
  auto sum = kiln::storage::import_bundle(store, file);
  if (!sum)
    return report(sum.error());
  if (as_json)
    print_json(json{{"closures", sum->closures}, {"jobs", sum->jobs},
                    {"images", sum->images}, {"names", sum->names}});
  else
    std::printf("imported %zu closures, %zu jobs, %zu images, %zu names from %s\n",
                sum->closures, sum->jobs, sum->images, sum->names, shown(file).c_str());
  return 0;
}

// What this machine could load, and for the rest what prevents it.
int print_portability(const kiln::Result<kiln::runtime::PortabilityReport>& r, bool as_json) {
  if (!r)
    return report(r.error());
  if (as_json) {
    json closures = json::array();
    for (const auto& c : r->closures)
      closures.push_back({{"closure", c.closure.hex()},
                          {"target", c.target},
                          {"names", c.names},
                          {"cpu", c.cpu},
                          {"loadable", c.loadable},
                          {"component", c.component},
                          {"reason", c.reason},
                          {"missing_features", c.missing},
                          {"unknown_features", c.unknown}});
    print_json(json{{"closures", r->closures.size()},
                    {"loadable", r->loadable},
                    {"not_loadable", r->closures.size() - r->loadable},
                    {"details", closures}});
    return 0;
  }
  std::printf("%zu of %zu closures load on this machine\n", r->loadable, r->closures.size());
  for (const auto& c : r->closures) {
    std::string names;
    for (const std::string& n : c.names)
      names += (names.empty() ? "" : ",") + n;
    std::string verdict = c.loadable ? "loads" : "no: " + c.component + " (" + c.reason + ")";
    std::printf("  %s  %-16s %-20s %s\n", c.closure.hex().c_str(), shown(c.target).c_str(),
                names.empty() ? "-" : shown(names).c_str(), shown(verdict).c_str());
  }
  return 0;
}

int cmd_explain(Store& store, const std::string& a, const std::string& b, bool as_json) {
  auto ka = kiln::parse_hash128(a);
  auto kb = kiln::parse_hash128(b);
  if (!ka || !kb)
    return usage_error((!ka ? ka : kb).error());
  auto diffs = kiln::storage::explain_keys(store, *ka, *kb);
  if (!diffs)
    return report(diffs.error());
  if (as_json) {
    json ds = json::array();
    for (const auto& d : *diffs)
      ds.push_back({{"component", d.component}, {"a", d.a}, {"b", d.b}});
    print_json(json{{"a", a}, {"b", b}, {"same", diffs->empty()}, {"differences", ds}});
    return 0;
  }
  if (diffs->empty()) {
    std::printf("same: every key component of %s and %s agrees\n", shown(a).c_str(),
                shown(b).c_str());
    return 0;
  }
  std::printf("%-12s  %-34s  %s\n", "COMPONENT", "A", "B");
  for (const auto& d : *diffs)
    std::printf("%-12s  %-34s  %s\n", shown(d.component).c_str(), shown(d.a).c_str(),
                shown(d.b).c_str());
  return 0;
}

int cmd_config(Store& store, const std::string& name, const std::string& value, bool as_json) {
  if (!name.empty()) {
    auto stored = kiln::storage::parse_setting(name, value);
    if (!stored)
      return usage_error(stored.error());
    if (!value.empty())
      if (kiln::Status s = store.set_setting(name, *stored); !s)
        return report(s.error());
  }
  auto limit = kiln::storage::size_limit(store);
  if (!limit)
    return report(limit.error());
  auto required = kiln::storage::signatures_required(store);
  if (!required)
    return report(required.error());
  if (as_json)
    print_json(json{{"max_size", limit->bytes},
                    {"max_size_source", limit->source},
                    {"require_signed", required->required},
                    {"require_signed_source", required->source}});
  else
    std::printf("max_size        %s (%lld bytes, from %s)\nrequire_signed  %d (from %s)\n",
                human_size(limit->bytes).c_str(), static_cast<long long>(limit->bytes),
                shown(limit->source).c_str(), int(required->required),
                shown(required->source).c_str());
  return 0;
}

int inspect_main(int argc, char** argv) {
  CLI::App app{"Inspect a Kiln cache", "kiln-inspect"};
  // A parse error quotes the arguments, which may hold any byte.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    const std::string what = e.what(), text = CLI::FailureMessage::simple(a, e);
    return kiln::tools::shown_message(what) + text.substr(std::min(what.size(), text.size()));
  });
  app.require_subcommand(1);
  app.footer(std::string(kiln::tools::kExitHelp) + "\n\n" + kiln::tools::kJsonHelp);
  app.set_version_flag("--version", kiln::tools::version_line("kiln-inspect"));
  std::string cache_path, what, target;
  bool as_json = false, read_only = false;
  app.add_flag("--read-only", read_only,
               "never write the cache (also $KILN_READ_ONLY=1; an unwritable cache is opened "
               "read-only anyway): gc, import, config set and stats --zero then fail");
  app.add_option("--cache", cache_path, "cache file (default: $KILN_CACHE, else "
                                        "$XDG_CACHE_HOME/kiln/kiln.db)");
  CLI::App* ls = app.add_subcommand("ls", "list jobs and root names");
  ls->add_flag("--json", as_json, "JSON output");
  std::string glob;
  ls->add_option("--target", target, "only this target");
  ls->add_option("--name", glob, "only roots whose name matches this glob, and their jobs");
  CLI::App* show = app.add_subcommand("show", "show a job (by key) or a root (by name or closure key)");
  show->add_option("KEY_OR_NAME", what, "job key, closure key or root name")->required();
  show->add_option("--target", target, "target of the root (default: the first)");
  show->add_flag("--json", as_json, "JSON output");
  std::string out_path, format;
  CLI::App* image = app.add_subcommand("image", "write a root's linked image (linking it if needed)");
  image->add_option("NAME_OR_KEY", what, "root name or closure key")->required();
  image->add_option("--target", target, "target spec")->required();
  image->add_option("-o", out_path, "output file")->required();
  CLI::App* libraries = app.add_subcommand("libraries", "list kernel libraries");
  libraries->add_flag("--json", as_json, "JSON output");
  CLI::App* library = app.add_subcommand(
      "library", "show a kernel library (its roots and jobs), or write its image with -o");
  library->add_option("NAME", what, "library name")->required();
  library->add_option("--target", target, "target of the library (default: the first)");
  library->add_option("-o", out_path, "write the library's linked image here (linking it if "
                                      "needed)");
  library->add_flag("--json", as_json, "JSON output");
  CLI::App* dump = app.add_subcommand("dump", "write a job's artifact to stdout");
  dump->add_option("KEY", what, "job key")->required();
  dump->add_option("--format", format, "ptx, bitcode or object")->required();
  bool zero = false, dot = false, dry_run = false;
  std::string max_size, older_than, file, key_b, setting_value;
  std::vector<std::string> which;
  CLI::App* stats = app.add_subcommand("stats", "counts, sizes, compression, hits and loads");
  stats->add_flag("--json", as_json, "JSON output");
  stats->add_flag("--zero", zero, "reset the hit, miss and load counters first");
  CLI::App* graph = app.add_subcommand("graph", "a root's deferred graph");
  graph->add_option("NAME_OR_KEY", what, "root name or closure key")->required();
  graph->add_option("--target", target, "target of the root");
  graph->add_flag("--json", as_json, "JSON output");
  graph->add_flag("--dot", dot, "Graphviz DOT output");
  CLI::App* verify = app.add_subcommand("verify", "check every blob, closure, name and key");
  verify->add_flag("--json", as_json, "JSON output");
  CLI::App* gc = app.add_subcommand("gc", "evict least recently used closures");
  gc->add_option("--max-size", max_size, "evict until the cache holds at most this (e.g. 500M)");
  gc->add_option("--older-than", older_than, "evict closures unused this long (e.g. 30d)");
  gc->add_flag("--dry-run", dry_run, "report what would be evicted; change nothing");
  gc->add_flag("--json", as_json, "JSON output");
  CLI::App* exp = app.add_subcommand("export", "write closures, images and names to a bundle");
  exp->add_option("FILE", file, "bundle file")->required();
  exp->add_option("NAME_OR_KEY", which, "roots or closure keys (default: every root)");
  exp->add_flag("--json", as_json, "JSON output");
  CLI::App* imp = app.add_subcommand("import", "add a bundle's contents, after validating all");
  imp->add_option("FILE", file, "bundle file")->required();
  imp->add_flag("--json", as_json, "JSON output");
  bool check_only = false;
  imp->add_flag("--check", check_only,
                "write nothing: report which closures this machine could load, and why not");
  CLI::App* portable = app.add_subcommand(
      "check-portable", "which closures this machine could load, and what prevents the rest");
  portable->add_flag("--json", as_json, "JSON output");
  CLI::App* explain = app.add_subcommand("explain", "which key components of two jobs differ");
  explain->add_option("KEY_A", what, "job key")->required();
  explain->add_option("KEY_B", key_b, "job key")->required();
  explain->add_flag("--json", as_json, "JSON output");
  CLI::App* config = app.add_subcommand("config", "show or set the cache's settings");
  config->add_option("NAME", what, "setting (max_size)");
  config->add_option("VALUE", setting_value, "new value");
  config->add_flag("--json", as_json, "JSON output");
  // Looked up before parsing, so that a usage error is JSON too.
  g_json_errors = kiln::tools::json_requested(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) { // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    if (g_json_errors)
      print_json(kiln::tools::error_json(kiln::make_error(kiln::Code::invalid_argument, e.what()),
                                         kExitUsage));
    return kExitUsage;
  }
  if (cache_path.empty()) {
    auto d = kiln::default_cache_path();
    if (!d)
      return report(d.error());
    cache_path = *d;
  }
  bool have_cache = ::access(cache_path.c_str(), F_OK) == 0;
  // A bundle check needs no cache: without one, signing is the environment's.
  if (imp->parsed() && check_only) {
    if (!have_cache)
      return print_portability(kiln::runtime::check_bundle_portable(nullptr, file), as_json);
    auto ro = kiln::storage::Store::open(cache_path, kiln::storage::OpenMode::read_only);
    if (!ro)
      return report(ro.error());
    return print_portability(kiln::runtime::check_bundle_portable(ro->get(), file), as_json);
  }
  // Inspecting never creates a cache; importing into a new one does.
  if (!imp->parsed() && !have_cache)
    return report(kiln::make_error(kiln::Code::not_found, "no cache at '" + cache_path + "'"));
  auto store = kiln::storage::Store::open(
      cache_path, read_only ? kiln::storage::OpenMode::read_only
                            : kiln::storage::OpenMode::automatic);
  if (!store)
    return report(store.error());
  if ((*store)->read_only()) {
    const char* write = gc->parsed()                                  ? "gc"
                        : imp->parsed()                               ? "import"
                        : config->parsed() && !setting_value.empty() ? "config set"
                        : stats->parsed() && zero                     ? "stats --zero"
                                                                      : nullptr;
    if (write)
      return report((*store)->read_only_error(std::string("run ") + write));
  }
  if (ls->parsed())
    return cmd_ls(**store, as_json, target, glob);
  if (image->parsed())
    return cmd_image(**store, what, target, out_path);
  if (dump->parsed())
    return cmd_dump(**store, what, format);
  if (libraries->parsed())
    return cmd_libraries(**store, as_json);
  if (library->parsed())
    return cmd_library(**store, what, target, out_path, as_json);
  if (stats->parsed())
    return cmd_stats(**store, as_json, zero);
  if (graph->parsed())
    return cmd_graph(**store, what, target, as_json, dot);
  if (verify->parsed())
    return cmd_verify(**store, as_json);
  if (gc->parsed())
    return cmd_gc(**store, max_size, older_than, dry_run, as_json);
  if (exp->parsed())
    return cmd_export(**store, file, which, as_json);
  if (imp->parsed())
    return cmd_import(**store, file, as_json);
  if (portable->parsed())
    return print_portability(kiln::runtime::check_portable(**store), as_json);
  if (explain->parsed())
    return cmd_explain(**store, what, key_b, as_json);
  if (config->parsed())
    return cmd_config(**store, what, setting_value, as_json);
  return cmd_show(**store, what, target, as_json);
}

} // namespace

int main(int argc, char** argv) {
  return kiln::tools::run_guarded("kiln-inspect", argc, argv, inspect_main);
}
