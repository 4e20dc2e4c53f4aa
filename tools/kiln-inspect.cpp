// kiln-inspect: what is in a Kiln cache. Reads only; never needs LLVM.
#include "storage/local/store.h"
#include "storage/bundle.h"
#include "core/keys.h"
#include "core/check.h"
#include "image/image.h"
#include "support/units.h"
#include "support/files.h"

#include <algorithm>
#include <fnmatch.h>
#include <set>
#include <map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace {

using kiln::human_size;
using json = nlohmann::ordered_json;
constexpr int kExitNotFound = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCache = 3;

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

int report(const kiln::Error& e) {
  std::cerr << "kiln-inspect: error: " << e.message << "\n";
  return e.code == kiln::Code::not_found ? kExitNotFound : kExitCache;
}

int cmd_ls(kiln::storage::Store& store, bool as_json, const std::string& target,
           const std::string& glob) {
  auto jobs = store.list_jobs();
  if (!jobs)
    return report(jobs.error());
  auto names = store.list_names();
  if (!names)
    return report(names.error());
  // --target keeps that target's jobs and names; --name keeps the names
  // matching the glob and the jobs their closures hold.
  auto name_ok = [&](const kiln::core::NameRecord& n) {
    return (target.empty() || n.target == target) &&
           (glob.empty() || ::fnmatch(glob.c_str(), n.name.c_str(), 0) == 0);
  };
  std::erase_if(*names, [&](const auto& n) { return !name_ok(n); });
  std::set<std::string> in_named;
  if (!glob.empty())
    for (const auto& n : *names)
      if (auto c = store.get_closure(n.closure))
        for (const auto& m : c->members)
          in_named.insert(m.job.hex());
  std::erase_if(*jobs, [&](const auto& j) {
    return (!target.empty() && j.target != target) ||
           (!glob.empty() && !in_named.count(j.key.hex()));
  });
  if (as_json) {
    json out;
    out["jobs"] = json::array();
    for (const auto& j : *jobs) {
      auto arts = store.artifact_infos(j.key);
      auto refs = store.job_refs(j.key);
      if (!arts)
        return report(arts.error());
      if (!refs)
        return report(refs.error());
      out["jobs"].push_back({{"key", j.key.hex()},
                             {"entry", j.entry},
                             {"target", j.target},
                             {"options", j.options},
                             {"artifacts", artifacts_json(*arts)},
                             {"refs", refs_json(*refs)}});
    }
    out["names"] = json::array();
    for (const auto& n : *names)
      out["names"].push_back({{"name", n.name}, {"target", n.target}, {"closure", n.closure.hex()}});
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("%-32s  %-8s  %-6s  %10s  %4s  %s\n", "KEY", "TARGET", "OPTS", "STORED", "REFS",
              "ENTRY");
  for (const auto& j : *jobs) {
    auto arts = store.artifact_infos(j.key);
    auto refs = store.job_refs(j.key);
    int64_t stored = 0;
    if (arts)
      for (const auto& a : *arts)
        stored += a.stored_size;
    std::printf("%-32s  %-8s  %-6s  %10s  %4zu  %s\n", j.key.hex().c_str(), j.target.c_str(),
                j.options.c_str(), human_size(stored).c_str(), refs ? refs->size() : size_t(0),
                j.entry.c_str());
  }
  if (!names->empty()) {
    std::printf("\n%-24s  %-8s  %s\n", "NAME", "TARGET", "CLOSURE");
    for (const auto& n : *names)
      std::printf("%-24s  %-8s  %s\n", n.name.c_str(), n.target.c_str(), n.closure.hex().c_str());
  }
  return 0;
}

int show_job(kiln::storage::Store& store, const kiln::core::JobRecord& j, bool as_json) {
  auto arts = store.artifact_infos(j.key);
  auto refs = store.job_refs(j.key);
  if (!arts)
    return report(arts.error());
  if (!refs)
    return report(refs.error());
  if (as_json) {
    json out{{"kind", "job"},         {"key", j.key.hex()},
             {"entry", j.entry},      {"target", j.target},
             {"options", j.options},  {"toolchain", j.toolchain},
             {"module_hash", j.module_hash.hex()}, {"symbol", j.symbol},
             {"triple", j.triple},    {"cpu", j.cpu},
             {"compile_ms", j.compile_ms}, {"artifacts", artifacts_json(*arts)},
             {"refs", refs_json(*refs)}};
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("job         %s\nentry       %s\ntarget      %s (%s, %s)\noptions     %s\n"
              "toolchain   %s\nmodule hash %s\nsymbol      %s\ncompile     %.1f ms\n",
              j.key.hex().c_str(), j.entry.c_str(), j.target.c_str(), j.triple.c_str(),
              j.cpu.c_str(), j.options.c_str(), j.toolchain.c_str(), j.module_hash.hex().c_str(),
              j.symbol.c_str(), j.compile_ms);
  for (const auto& a : *arts)
    std::printf("artifact    %-6s %s raw, %s stored\n", a.format.c_str(),
                human_size(a.raw_size).c_str(), human_size(a.stored_size).c_str());
  for (const auto& r : *refs)
    std::printf("deferred    %s -> %s\n", r.symbol.c_str(), r.entry.c_str());
  return 0;
}

int show_root(kiln::storage::Store& store, const std::string& name, const std::string& target,
              const kiln::Hash128& closure_key, bool as_json) {
  auto closure = store.get_closure(closure_key);
  if (!closure)
    return report(closure.error());
  if (as_json) {
    json members = json::array();
    for (const auto& m : closure->members)
      members.push_back({{"symbol", m.symbol}, {"entry", m.entry}, {"key", m.job.hex()}});
    json out{{"kind", "root"},
             {"name", name},
             {"target", target},
             {"closure", closure_key.hex()},
             {"root_job", closure->root_job.hex()},
             {"members", members}};
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("root        %s\ntarget      %s\nclosure     %s\nroot job    %s\nmembers     %zu\n",
              name.c_str(), target.c_str(), closure_key.hex().c_str(),
              closure->root_job.hex().c_str(), closure->members.size());
  for (const auto& m : closure->members)
    std::printf("  %-32s  %s  %s\n", m.job.hex().c_str(), m.symbol.c_str(), m.entry.c_str());
  return 0;
}

int cmd_show(kiln::storage::Store& store, const std::string& what, const std::string& target,
             bool as_json) {
  if (kiln::is_hash128_hex(what)) {
    auto key = *kiln::parse_hash128(what);
    auto job = store.get_job(key);
    if (job)
      return show_job(store, *job, as_json);
    if (job.error().code != kiln::Code::not_found)
      return report(job.error());
    auto closure = store.get_closure(key);
    if (closure)
      return show_root(store, "", closure->target, key, as_json);
  }
  auto names = store.names_for(what);
  if (!names)
    return report(names.error());
  for (const auto& n : *names)
    if (target.empty() || n.target == target)
      return show_root(store, n.name, n.target, n.closure, as_json);
  return report(kiln::make_error(kiln::Code::not_found,
                                 "no job, closure or root named '" + what + "' in cache '" +
                                     store.path() + "'"));
}

int cmd_image(kiln::storage::Store& store, const std::string& what, const std::string& target,
              const std::string& out_path) {
  kiln::Hash128 key;
  if (auto k = store.resolve_name(what, target); k) {
    key = *k;
  } else if (kiln::is_hash128_hex(what)) {
    key = *kiln::parse_hash128(what);
  } else {
    return report(k.error());
  }
  auto closure = store.get_closure(key);
  if (!closure)
    return report(closure.error());
  auto bytes = kiln::image::fetch_or_link(store, *closure);
  if (!bytes)
    return report(bytes.error());
  if (kiln::Status s = kiln::write_file_atomic(out_path, *bytes); !s)
    return report(s.error());
  std::fprintf(stderr, "kiln-inspect: wrote the %s image of closure %s (%zu bytes) to %s\n",
               closure->target.c_str(), key.hex().c_str(), bytes->size(), out_path.c_str());
  return 0;
}

int cmd_dump(kiln::storage::Store& store, const std::string& what, const std::string& format) {
  auto key = kiln::parse_hash128(what);
  if (!key)
    return report(key.error());
  auto job = store.get_job(*key);
  if (!job)
    return report(job.error());
  std::vector<std::string> formats;
  if (format == "ptx")
    formats = {"ptx"};
  else if (format == "bitcode")
    formats = {"bc"};
  else if (format == "object")
    formats = {"obj", "cubin"};
  else
    return report(kiln::make_error(kiln::Code::invalid_argument,
                                   "unknown format '" + format + "'; use ptx, bitcode or object"));
  for (const std::string& f : formats) {
    auto bytes = store.get_artifact(*key, f);
    if (bytes) {
      std::fwrite(bytes->data(), 1, bytes->size(), stdout);
      return 0;
    }
    if (bytes.error().code != kiln::Code::not_found)
      return report(bytes.error());
  }
  return report(kiln::make_error(kiln::Code::not_found, "job " + what + " (" + job->target +
                                                            ") has no " + format + " artifact"));
}


// NAME (a root, for `target` or its only/first target) or a 32-hex closure key.
kiln::Result<kiln::Hash128> resolve_closure(kiln::storage::Store& store, const std::string& what,
                                            const std::string& target) {
  auto names = store.names_for(what);
  if (!names)
    return names.error();
  for (const auto& n : *names)
    if (target.empty() || n.target == target)
      return n.closure;
  if (kiln::is_hash128_hex(what))
    return kiln::parse_hash128(what);
  return kiln::make_error(kiln::Code::not_found,
                          "no root named '" + what + "'" +
                              (target.empty() ? std::string() : " for target " + target) +
                              " in cache '" + store.path() + "'");
}

int cmd_stats(kiln::storage::Store& store, bool as_json, bool zero) {
  if (zero)
    if (kiln::Status s = store.zero_counters(); !s)
      return report(s.error());
  auto st = store.stats();
  if (!st)
    return report(st.error());
  auto limit = store.max_size();
  if (!limit)
    return report(limit.error());
  double ratio = st->raw_bytes ? double(st->stored_bytes) / double(st->raw_bytes) : 0.0;
  const kiln::storage::Counters& c = st->counters;
  if (as_json) {
    json targets = json::object();
    for (const auto& [t, n] : st->jobs_per_target)
      targets[t] = n;
    json out{{"jobs", st->jobs},
             {"closures", st->closures},
             {"images", st->images},
             {"names", st->names},
             {"stored_bytes", st->stored_bytes},
             {"raw_bytes", st->raw_bytes},
             {"ratio", ratio},
             {"file_bytes", st->file_bytes},
             {"live_bytes", st->live_bytes},
             {"max_size", *limit},
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
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("cache          %s\n", store.path().c_str());
  std::printf("jobs           %lld\n", static_cast<long long>(st->jobs));
  for (const auto& [t, n] : st->jobs_per_target)
    std::printf("  %-12s %lld\n", t.c_str(), static_cast<long long>(n));
  std::printf("closures       %lld\nimages         %lld\nnames          %lld\n",
              static_cast<long long>(st->closures), static_cast<long long>(st->images),
              static_cast<long long>(st->names));
  std::printf("stored         %s of %s raw (compression ratio %.2f)\n",
              human_size(st->stored_bytes).c_str(), human_size(st->raw_bytes).c_str(), ratio);
  std::printf("file           %s (%s in use), limit %s\n", human_size(st->file_bytes).c_str(),
              human_size(st->live_bytes).c_str(), human_size(*limit).c_str());
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

int cmd_graph(kiln::storage::Store& store, const std::string& what, const std::string& target,
              bool as_json, bool dot) {
  auto key = resolve_closure(store, what, target);
  if (!key)
    return report(key.error());
  auto closure = store.get_closure(*key);
  if (!closure)
    return report(closure.error());
  std::map<std::string, const kiln::core::ClosureMember*> by_symbol;
  for (const auto& m : closure->members)
    by_symbol[m.symbol] = &m;
  struct Edge {
    std::string from, to, symbol;
  };
  std::vector<Edge> edges;
  for (const auto& m : closure->members) {
    auto refs = store.job_refs(m.job);
    if (!refs)
      return report(refs.error());
    for (const auto& r : *refs)
      if (auto it = by_symbol.find(r.symbol); it != by_symbol.end())
        edges.push_back({m.job.hex(), it->second->job.hex(), r.symbol});
  }
  if (as_json) {
    json nodes = json::array(), es = json::array();
    for (const auto& m : closure->members)
      nodes.push_back({{"key", m.job.hex()}, {"entry", m.entry}, {"symbol", m.symbol}});
    for (const Edge& e : edges)
      es.push_back({{"from", e.from}, {"to", e.to}, {"symbol", e.symbol}});
    std::cout << json{{"closure", key->hex()},
                      {"root", closure->root_job.hex()},
                      {"target", closure->target},
                      {"nodes", nodes},
                      {"edges", es}}
                     .dump()
              << "\n";
    return 0;
  }
  if (dot) {
    // Labels: entry and short key; the root is drawn bold; an edge back to a
    // node already on the path draws the cycle as it is.
    std::printf("digraph kiln {\n  label=\"closure %s (%s)\";\n  node [shape=box, "
                "fontname=\"monospace\"];\n",
                key->short_hex().c_str(), closure->target.c_str());
    for (const auto& m : closure->members) {
      std::string label = m.entry;
      for (size_t p = 0; (p = label.find('"', p)) != std::string::npos; p += 2)
        label.insert(p, "\\");
      std::printf("  \"%s\" [label=\"%s\\n%s\"%s];\n", m.job.hex().c_str(), label.c_str(),
                  m.job.short_hex(8).c_str(), m.job == closure->root_job ? ", style=bold" : "");
    }
    for (const Edge& e : edges)
      std::printf("  \"%s\" -> \"%s\";\n", e.from.c_str(), e.to.c_str());
    std::printf("}\n");
    return 0;
  }
  std::printf("closure %s (%s), %zu jobs, %zu deferred references\n", key->hex().c_str(),
              closure->target.c_str(), closure->members.size(), edges.size());
  std::map<std::string, std::string> entry_of;
  for (const auto& m : closure->members)
    entry_of[m.job.hex()] = m.entry;
  for (const auto& m : closure->members) {
    std::printf("  %s %s%s\n", m.job.short_hex().c_str(), m.entry.c_str(),
                m.job == closure->root_job ? "  (root)" : "");
    for (const Edge& e : edges)
      if (e.from == m.job.hex())
        std::printf("    -> %s %s\n", e.to.substr(0, 12).c_str(), entry_of[e.to].c_str());
  }
  return 0;
}

int cmd_verify(kiln::storage::Store& store, bool as_json) {
  auto problems = store.verify();
  if (!problems)
    return report(problems.error());
  // Above the storage checks: every job's key still matches its stored
  // components, and every image is what a loader would accept.
  auto jobs = store.list_jobs();
  if (!jobs)
    return report(jobs.error());
  for (const auto& j : *jobs) {
    auto key = kiln::core::job_key_of(j);
    if (!key)
      problems->push_back({"job", j.key.hex(), key.error().message});
    else if (*key != j.key)
      problems->push_back({"job", j.key.hex(), "job " + j.key.hex() + " (" + j.entry +
                                                   ") does not match its stored components"});
  }
  auto closures = store.list_closures();
  if (!closures)
    return report(closures.error());
  for (const auto& c : *closures) {
    auto images = store.images_of(c.key);
    if (!images)
      continue; // a damaged blob, already reported by its checksum
    for (const auto& i : *images)
      if (kiln::Status s = kiln::core::check_image(i.bytes, c); !s)
        problems->push_back({"image", c.key.hex(), s.error().message});
  }
  if (as_json) {
    json ps = json::array();
    for (const auto& p : *problems)
      ps.push_back({{"kind", p.kind}, {"key", p.key}, {"message", p.message}});
    std::cout << json{{"ok", problems->empty()},
                      {"jobs", jobs->size()},
                      {"closures", closures->size()},
                      {"schema", kiln::storage::schema_version()},
                      {"problems", ps}}
                     .dump()
              << "\n";
  } else if (problems->empty()) {
    std::printf("ok: %zu jobs, %zu closures, schema %d\n", jobs->size(), closures->size(),
                kiln::storage::schema_version());
  } else {
    for (const auto& p : *problems)
      std::printf("%-8s %s  %s\n", p.kind.c_str(), p.key.c_str(), p.message.c_str());
    std::printf("%zu problem(s)\n", problems->size());
  }
  return problems->empty() ? 0 : 1;
}

int cmd_gc(kiln::storage::Store& store, const std::string& max_size, const std::string& older_than,
           bool dry_run, bool as_json) {
  kiln::storage::GcOptions o;
  o.dry_run = dry_run;
  if (!max_size.empty()) {
    auto v = kiln::parse_size(max_size);
    if (!v) {
      std::cerr << "kiln-inspect: error: " << v.error().message << "\n";
      return kExitUsage;
    }
    o.max_size = *v;
  }
  if (!older_than.empty()) {
    auto v = kiln::parse_duration(older_than);
    if (!v) {
      std::cerr << "kiln-inspect: error: " << v.error().message << "\n";
      return kExitUsage;
    }
    o.older_than = *v;
  }
  if (o.max_size < 0 && o.older_than < 0) {
    auto limit = store.max_size();
    if (!limit)
      return report(limit.error());
    o.max_size = *limit;
  }
  auto rep = store.gc(o);
  if (!rep)
    return report(rep.error());
  if (as_json) {
    json evicted = json::array();
    for (const auto& k : rep->evicted_closures)
      evicted.push_back(k.hex());
    std::cout << json{{"dry_run", dry_run},
                      {"evicted_closures", evicted},
                      {"evicted_jobs", rep->evicted_jobs},
                      {"evicted_images", rep->evicted_images},
                      {"bytes_before", rep->bytes_before},
                      {"bytes_after", rep->bytes_after}}
                     .dump()
              << "\n";
    return 0;
  }
  std::printf("%s%zu closures, %lld jobs, %lld images; %s -> %s in use\n",
              dry_run ? "would evict " : "evicted ", rep->evicted_closures.size(),
              static_cast<long long>(rep->evicted_jobs),
              static_cast<long long>(rep->evicted_images), human_size(rep->bytes_before).c_str(),
              human_size(rep->bytes_after).c_str());
  return 0;
}

int cmd_export(kiln::storage::Store& store, const std::string& file,
               const std::vector<std::string>& which, bool as_json) {
  std::vector<kiln::Hash128> keys;
  if (which.empty()) {
    auto names = store.list_names();
    if (!names)
      return report(names.error());
    for (const auto& n : *names)
      keys.push_back(n.closure);
  } else {
    for (const std::string& w : which) {
      auto names = store.names_for(w);
      if (!names)
        return report(names.error());
      for (const auto& n : *names)
        keys.push_back(n.closure);
      if (names->empty()) {
        auto k = resolve_closure(store, w, "");
        if (!k)
          return report(k.error());
        keys.push_back(*k);
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  auto data = kiln::storage::collect_bundle(store, keys);
  if (!data)
    return report(data.error());
  std::string bytes = kiln::storage::encode_bundle(*data);
  if (kiln::Status s = kiln::write_file_atomic(file, bytes); !s)
    return report(s.error());
  if (as_json)
    std::cout << json{{"closures", data->closures.size()}, {"jobs", data->jobs.size()},
                      {"images", data->images.size()}, {"names", data->names.size()},
                      {"bytes", bytes.size()}}
                     .dump()
              << "\n";
  else
    std::printf("exported %zu closures, %zu jobs, %zu images, %zu names to %s (%s)\n",
                data->closures.size(), data->jobs.size(), data->images.size(),
                data->names.size(), file.c_str(), human_size(int64_t(bytes.size())).c_str());
  return 0;
}

int cmd_import(kiln::storage::Store& store, const std::string& file, bool as_json) {
  auto bytes = kiln::read_file(file);
  if (!bytes)
    return report(bytes.error());
  // Decode and validate everything first: a damaged or hostile bundle
  // changes nothing.
  auto data = kiln::storage::decode_bundle(*bytes);
  if (!data)
    return report(data.error().context("'" + file + "'"));
  if (kiln::Status s = kiln::core::check_bundle(*data); !s)
    return report(s.error().context("'" + file + "'"));
  if (kiln::Status s = store.put_bundle(*data); !s)
    return report(s.error());
  if (as_json)
    std::cout << json{{"closures", data->closures.size()}, {"jobs", data->jobs.size()},
                      {"images", data->images.size()}, {"names", data->names.size()}}
                     .dump()
              << "\n";
  else
    std::printf("imported %zu closures, %zu jobs, %zu images, %zu names from %s\n",
                data->closures.size(), data->jobs.size(), data->images.size(),
                data->names.size(), file.c_str());
  return 0;
}

// The components of a job's key, by name, as stored.
std::vector<std::pair<std::string, std::string>> key_components(const kiln::core::JobRecord& j) {
  auto c = kiln::core::components_of(j.module_hash.hex(), j.entry, j.target, j.triple, j.cpu,
                                       j.features, j.options, j.toolchain);
  std::string opt = c ? std::to_string(c->identity.options.opt_level) : j.options;
  std::string debug = c ? (c->identity.options.debug ? "true" : "false") : j.options;
  return {{"module_hash", j.module_hash.hex()}, {"entry", j.entry}, {"target", j.target},
          {"triple", j.triple}, {"cpu", j.cpu}, {"features", j.features},
          {"opt_level", opt}, {"debug", debug}, {"toolchain", j.toolchain}};
}

int cmd_explain(kiln::storage::Store& store, const std::string& a, const std::string& b,
                bool as_json) {
  auto ka = kiln::parse_hash128(a);
  auto kb = kiln::parse_hash128(b);
  if (!ka || !kb) {
    std::cerr << "kiln-inspect: error: " << (!ka ? ka : kb).error().message << "\n";
    return kExitUsage;
  }
  auto ja = store.get_job(*ka);
  if (!ja)
    return report(ja.error());
  auto jb = store.get_job(*kb);
  if (!jb)
    return report(jb.error());
  auto ca = key_components(*ja), cb = key_components(*jb);
  json diffs = json::array();
  for (size_t i = 0; i < ca.size(); ++i)
    if (ca[i].second != cb[i].second)
      diffs.push_back({{"component", ca[i].first}, {"a", ca[i].second}, {"b", cb[i].second}});
  if (as_json) {
    std::cout << json{{"a", a}, {"b", b}, {"same", diffs.empty()}, {"differences", diffs}}.dump()
              << "\n";
    return 0;
  }
  if (diffs.empty()) {
    std::printf("same: every key component of %s and %s agrees\n", a.c_str(), b.c_str());
    return 0;
  }
  std::printf("%-12s  %-34s  %s\n", "COMPONENT", "A", "B");
  for (const auto& d : diffs)
    std::printf("%-12s  %-34s  %s\n", d["component"].get<std::string>().c_str(),
                d["a"].get<std::string>().c_str(), d["b"].get<std::string>().c_str());
  return 0;
}

int cmd_config(kiln::storage::Store& store, const std::string& name, const std::string& value,
               bool as_json) {
  if (!name.empty() && name != "max_size") {
    std::cerr << "kiln-inspect: error: unknown setting '" << name << "' (known: max_size)\n";
    return kExitUsage;
  }
  if (!value.empty()) {
    auto v = kiln::parse_size(value);
    if (!v) {
      std::cerr << "kiln-inspect: error: " << v.error().message << "\n";
      return kExitUsage;
    }
    if (kiln::Status s = store.set_setting("max_size", std::to_string(*v)); !s)
      return report(s.error());
  }
  auto limit = store.max_size();
  if (!limit)
    return report(limit.error());
  const char* env = std::getenv("KILN_CACHE_MAX_SIZE");
  std::string source = env && *env ? "KILN_CACHE_MAX_SIZE"
                       : store.setting("max_size") ? "cache setting"
                                                   : "default";
  if (as_json)
    std::cout << json{{"max_size", *limit}, {"max_size_source", source}}.dump() << "\n";
  else
    std::printf("max_size  %s (%lld bytes, from %s)\n", human_size(*limit).c_str(),
                static_cast<long long>(*limit), source.c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Inspect a Kiln cache", "kiln-inspect"};
  app.require_subcommand(1);
  std::string cache_path, what, target;
  bool as_json = false;
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
  CLI::App* explain = app.add_subcommand("explain", "which key components of two jobs differ");
  explain->add_option("KEY_A", what, "job key")->required();
  explain->add_option("KEY_B", key_b, "job key")->required();
  explain->add_flag("--json", as_json, "JSON output");
  CLI::App* config = app.add_subcommand("config", "show or set the cache's settings");
  config->add_option("NAME", what, "setting (max_size)");
  config->add_option("VALUE", setting_value, "new value");
  config->add_flag("--json", as_json, "JSON output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  if (cache_path.empty()) {
    auto d = kiln::default_cache_path();
    if (!d)
      return report(d.error());
    cache_path = *d;
  }
  // Inspecting never creates a cache; importing into a new one does.
  if (!imp->parsed() && ::access(cache_path.c_str(), F_OK) != 0)
    return report(kiln::make_error(kiln::Code::not_found, "no cache at '" + cache_path + "'"));
  auto store = kiln::storage::Store::open(cache_path);
  if (!store)
    return report(store.error());
  if (ls->parsed())
    return cmd_ls(**store, as_json, target, glob);
  if (image->parsed())
    return cmd_image(**store, what, target, out_path);
  if (dump->parsed())
    return cmd_dump(**store, what, format);
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
  if (explain->parsed())
    return cmd_explain(**store, what, key_b, as_json);
  if (config->parsed())
    return cmd_config(**store, what, setting_value, as_json);
  return cmd_show(**store, what, target, as_json);
}
