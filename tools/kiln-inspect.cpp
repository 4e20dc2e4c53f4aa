// kiln-inspect: what is in a Kiln cache. Reads only; never needs LLVM.
#include "cache/store.h"
#include "runtime/image_link.h"
#include "support/files.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace {

using json = nlohmann::ordered_json;
constexpr int kExitNotFound = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCache = 3;

std::string human_size(int64_t n) {
  char buf[32];
  if (n < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  else if (n < 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(n) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(n) / (1024 * 1024));
  return buf;
}

json artifacts_json(const std::vector<kiln::cache::ArtifactInfo>& arts) {
  json a = json::array();
  for (const auto& x : arts)
    a.push_back({{"format", x.format}, {"raw_size", x.raw_size}, {"stored_size", x.stored_size}});
  return a;
}

json refs_json(const std::vector<kiln::cache::JobRef>& refs) {
  json a = json::array();
  for (const auto& r : refs)
    a.push_back({{"symbol", r.symbol}, {"entry", r.entry}});
  return a;
}

int report(const kiln::Error& e) {
  std::cerr << "kiln-inspect: error: " << e.message << "\n";
  return e.code == kiln::Code::not_found ? kExitNotFound : kExitCache;
}

int cmd_ls(kiln::cache::Store& store, bool as_json) {
  auto jobs = store.list_jobs();
  if (!jobs)
    return report(jobs.error());
  auto names = store.list_names();
  if (!names)
    return report(names.error());
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

int show_job(kiln::cache::Store& store, const kiln::cache::JobRecord& j, bool as_json) {
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

int show_root(kiln::cache::Store& store, const std::string& name, const std::string& target,
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

int cmd_show(kiln::cache::Store& store, const std::string& what, const std::string& target,
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

int cmd_image(kiln::cache::Store& store, const std::string& what, const std::string& target,
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
  auto bytes = kiln::runtime::fetch_or_link_image(store, *closure);
  if (!bytes)
    return report(bytes.error());
  if (kiln::Status s = kiln::write_file_atomic(out_path, *bytes); !s)
    return report(s.error());
  std::fprintf(stderr, "kiln-inspect: wrote the %s image of closure %s (%zu bytes) to %s\n",
               closure->target.c_str(), key.hex().c_str(), bytes->size(), out_path.c_str());
  return 0;
}

int cmd_dump(kiln::cache::Store& store, const std::string& what, const std::string& format) {
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
  // Inspecting never creates a cache.
  if (::access(cache_path.c_str(), F_OK) != 0)
    return report(kiln::make_error(kiln::Code::not_found, "no cache at '" + cache_path + "'"));
  auto store = kiln::cache::Store::open(cache_path);
  if (!store)
    return report(store.error());
  if (ls->parsed())
    return cmd_ls(**store, as_json);
  if (image->parsed())
    return cmd_image(**store, what, target, out_path);
  if (dump->parsed())
    return cmd_dump(**store, what, format);
  return cmd_show(**store, what, target, as_json);
}
