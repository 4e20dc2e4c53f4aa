// kiln-inspect: what is in a Kiln cache. Reads only (but for gc, import,
// config set and stats --zero, which a read-only cache refuses); never needs
// LLVM. Exit statuses: tools/exit_status.h; with --json, a failure is one JSON
// object on stdout with an "error" and the "exit_status". Each subcommand is
// one library call: this file parses arguments and prints, in text or JSON.
// Names, targets, paths and messages are written as tools/safe_text.h says
// (JSON that keeps every byte; text with control bytes escaped).
#include <kiln/admin.hpp>
#include <kiln/kiln.hpp>

#include "exit_status.h"
#include "safe_text.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include <unistd.h>

namespace {

namespace admin = kiln::admin;
using kiln::Cache;
using kiln::admin::human_size;
using kiln::tools::kExitUsage;
using kiln::tools::shown;

// Whether the command line has --json, so errors are JSON too: set once in
// main, before any command runs.
bool g_json_errors = false;

int report(const kiln::Error& e, int status) {
  return kiln::tools::report_error("kiln-inspect", e, status, g_json_errors);
}

int report(const kiln::Error& e) { return report(e, kiln::tools::exit_status(e)); }

/// A view on stdout: its JSON (the library's rendering, as kiln/admin.h
/// returns it), else `text(view)`.
template <class View, class Text> int print(const kiln::Result<View>& v, bool as_json, Text&& text) {
  if (!v)
    return report(v.error());
  if (as_json) {
    std::cout << admin::to_json(*v) << "\n";
    return 0;
  }
  return text(*v);
}

int cmd_ls(const Cache& cache, bool as_json, const std::string& target, const std::string& glob) {
  auto listing = admin::list(cache, {target, glob});
  if (listing && as_json)
    for (const auto& j : listing->jobs) {
      if (!j.artifacts)
        return report(j.artifacts.error());
      if (!j.refs)
        return report(j.refs.error());
    }
  return print(listing, as_json, [](const admin::Listing& l) {
    // The target column is as wide as its longest spec ("host:x86-64-v3",
    // "gfx942:sramecc+:xnack-"), and never narrower than 8.
    int tw = 8;
    for (const auto& j : l.jobs)
      tw = std::max(tw, int(shown(j.job.target).size()));
    for (const auto& n : l.names)
      tw = std::max(tw, int(shown(n.target).size()));
    std::printf("%-32s  %-*s  %-6s  %10s  %4s  %s\n", "KEY", tw, "TARGET", "OPTS", "STORED",
                "REFS", "ENTRY");
    // A job whose artifacts or references cannot be read still gets its row.
    for (const auto& j : l.jobs) {
      int64_t stored = 0;
      if (j.artifacts)
        for (const auto& a : *j.artifacts)
          stored += a.stored_size;
      const admin::Job& r = j.job;
      std::printf("%-32s  %-*s  %-6s  %10s  %4zu  %s\n", r.key.c_str(), tw,
                  shown(r.target).c_str(), shown(r.options).c_str(), human_size(stored).c_str(),
                  j.refs ? j.refs->size() : size_t(0), shown(r.entry).c_str());
    }
    if (!l.names.empty()) {
      std::printf("\n%-24s  %-*s  %s\n", "NAME", tw, "TARGET", "CLOSURE");
      for (const auto& n : l.names)
        std::printf("%-24s  %-*s  %s\n", shown(n.name).c_str(), tw, shown(n.target).c_str(),
                    n.closure.c_str());
    }
    return 0;
  });
}

int show_job(const admin::Job& j) {
  std::printf("job         %s\nentry       %s\ntarget      %s (%s, %s)\noptions     %s\n"
              "toolchain   %s\nmodule hash %s\nsymbol      %s\ncompile     %.1f ms\n",
              j.key.c_str(), shown(j.entry).c_str(), shown(j.target).c_str(),
              shown(j.triple).c_str(), shown(j.cpu).c_str(), shown(j.options).c_str(),
              shown(j.toolchain).c_str(), j.module_hash.c_str(), shown(j.symbol).c_str(),
              j.compile_ms);
  for (const auto& a : j.artifacts)
    std::printf("artifact    %-6s %s raw, %s stored\n", shown(a.format).c_str(),
                human_size(a.raw_size).c_str(), human_size(a.stored_size).c_str());
  for (const auto& r : j.refs)
    std::printf("deferred    %s -> %s\n", shown(r.symbol).c_str(), shown(r.entry).c_str());
  return 0;
}

void print_members(const std::vector<admin::Member>& members) {
  for (const auto& m : members)
    std::printf("  %-32s  %s  %s\n", m.key.c_str(), shown(m.symbol).c_str(),
                shown(m.entry).c_str());
}

int show_root(const admin::Root& root) {
  std::printf("root        %s\ntarget      %s\nclosure     %s\nroot job    %s\nmembers     %zu\n",
              shown(root.name).c_str(), shown(root.target).c_str(), root.closure.c_str(),
              root.root_job.c_str(), root.members.size());
  if (!root.name.empty())
    std::printf("unit        %s\n", root.unit.empty() ? "(unknown)" : shown(root.unit).c_str());
  print_members(root.members);
  return 0;
}

int cmd_show(const Cache& cache, const std::string& what, const std::string& target,
             bool as_json) {
  return print(admin::show(cache, what, target), as_json, [](const admin::Entry& e) {
    if (const auto* job = std::get_if<admin::Job>(&e))
      return show_job(*job);
    return show_root(std::get<admin::Root>(e));
  });
}

int cmd_image(const Cache& cache, const std::string& what, const std::string& target,
              const std::string& out_path) {
  auto image = admin::export_image(cache, what, target, out_path);
  if (!image)
    return report(image.error());
  std::fprintf(stderr, "kiln-inspect: wrote the %s image of closure %s (%zu bytes) to %s\n",
               shown(image->target).c_str(), image->closure.c_str(), image->bytes,
               shown(out_path).c_str());
  return 0;
}

int cmd_libraries(const Cache& cache, bool as_json) {
  return print(admin::libraries(cache), as_json, [](const std::vector<admin::Library>& libs) {
    for (const auto& l : libs)
      std::printf("%-24s %-12s %s  %zu roots\n", shown(l.name).c_str(), shown(l.target).c_str(),
                  l.closure.c_str(), l.roots.size());
    return 0;
  });
}

int cmd_library(const Cache& cache, const std::string& name, const std::string& target,
                const std::string& out_path, bool as_json) {
  if (!out_path.empty()) {
    auto image = admin::export_library_image(cache, name, target, out_path);
    if (!image)
      return report(image.error());
    std::fprintf(stderr,
                 "kiln-inspect: wrote the %s image of library %s (closure %s, %zu jobs, %zu "
                 "bytes) to %s\n",
                 shown(image->target).c_str(), shown(name).c_str(), image->closure.c_str(),
                 image->members, image->bytes, shown(out_path).c_str());
    return 0;
  }
  return print(admin::library(cache, name, target), as_json, [](const admin::Library& l) {
    std::printf("library     %s\ntarget      %s\nclosure     %s\nroots       %zu\nmembers     "
                "%zu\nimages      %zu\n",
                shown(l.name).c_str(), shown(l.target).c_str(), l.closure.c_str(),
                l.roots.size(), l.members.size(), l.images);
    for (const std::string& r : l.roots)
      std::printf("  root %s\n", shown(r).c_str());
    print_members(l.members);
    return 0;
  });
}

int cmd_dump(const Cache& cache, const std::string& what, const std::string& format) {
  auto bytes = admin::dump(cache, what, format);
  if (!bytes)
    return report(bytes.error());
  std::fwrite(bytes->data(), 1, bytes->size(), stdout);
  return 0;
}

int cmd_stats(const Cache& cache, bool as_json, bool zero) {
  return print(admin::stats(cache, zero), as_json, [](const admin::Stats& st) {
    const admin::Counters& c = st.counters;
    std::printf("cache          %s\n", shown(st.cache).c_str());
    std::printf("jobs           %lld\n", static_cast<long long>(st.jobs));
    for (const auto& [t, n] : st.jobs_per_target)
      std::printf("  %-12s %lld\n", shown(t).c_str(), static_cast<long long>(n));
    std::printf("closures       %lld\nimages         %lld\nnames          %lld\n",
                static_cast<long long>(st.closures), static_cast<long long>(st.images),
                static_cast<long long>(st.names));
    std::printf("stored         %s of %s raw (compression ratio %.2f)\n",
                human_size(st.stored_bytes).c_str(), human_size(st.raw_bytes).c_str(), st.ratio);
    std::printf("file           %s (%s in use), limit %s\n", human_size(st.file_bytes).c_str(),
                human_size(st.live_bytes).c_str(), human_size(st.max_size).c_str());
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
  });
}

int cmd_graph(const Cache& cache, const std::string& what, const std::string& target,
              bool as_json, bool dot) {
  return print(admin::graph(cache, what, target), as_json, [dot](const admin::Graph& g) {
    auto short_key = [](const std::string& key, size_t n = 12) { return key.substr(0, n); };
    if (dot) {
      // Labels: entry and short key; the root is drawn bold; an edge back to
      // a node already on the path draws the cycle as it is.
      std::printf("digraph kiln {\n  label=\"closure %s (%s)\";\n  node [shape=box, "
                  "fontname=\"monospace\"];\n",
                  short_key(g.closure).c_str(), kiln::tools::dot_quoted(g.target).c_str());
      for (const auto& m : g.members)
        std::printf("  \"%s\" [label=\"%s\\n%s\"%s];\n", m.key.c_str(),
                    kiln::tools::dot_quoted(m.entry).c_str(), short_key(m.key, 8).c_str(),
                    m.key == g.root_job ? ", style=bold" : "");
      for (const auto& e : g.edges)
        std::printf("  \"%s\" -> \"%s\";\n", e.from.c_str(), e.to.c_str());
      std::printf("}\n");
      return 0;
    }
    std::printf("closure %s (%s), %zu jobs, %zu deferred references\n", g.closure.c_str(),
                shown(g.target).c_str(), g.members.size(), g.edges.size());
    std::map<std::string, std::string> entry_of;
    for (const auto& m : g.members)
      entry_of[m.key] = m.entry;
    for (const auto& m : g.members) {
      std::printf("  %s %s%s\n", short_key(m.key).c_str(), shown(m.entry).c_str(),
                  m.key == g.root_job ? "  (root)" : "");
      for (const auto& e : g.edges)
        if (e.from == m.key)
          std::printf("    -> %s %s\n", short_key(e.to).c_str(),
                      shown(entry_of[e.to]).c_str());
    }
    return 0;
  });
}

int cmd_verify(const Cache& cache, bool as_json) {
  auto rep = admin::verify(cache);
  int rc = print(rep, as_json, [](const admin::VerifyReport& r) {
    if (r.ok()) {
      std::printf("ok: %zu jobs, %zu closures, schema %d\n", r.jobs, r.closures, r.schema);
      return 0;
    }
    for (const auto& p : r.problems)
      std::printf("%-8s %s  %s\n", shown(p.kind).c_str(), shown(p.key).c_str(),
                  kiln::tools::shown_message(p.message).c_str());
    std::printf("%zu problem(s)\n", r.problems.size());
    return 0;
  });
  return rc ? rc : rep->ok() ? 0 : 1;
}

int cmd_gc(const Cache& cache, const admin::GcOptions& options, bool as_json) {
  return print(admin::gc(cache, options), as_json, [](const admin::GcReport& r) {
    std::printf("%s%zu closures, %lld jobs, %lld images; %s -> %s in use\n",
                r.dry_run ? "would evict " : "evicted ", r.evicted_closures.size(),
                static_cast<long long>(r.evicted_jobs),
                static_cast<long long>(r.evicted_images), human_size(r.bytes_before).c_str(),
                human_size(r.bytes_after).c_str());
    if (r.dropped_key_form_names > 0)
      std::printf("%s %lld name or library rows of key form (never consulted)\n",
                  r.dry_run ? "would drop" : "dropped",
                  static_cast<long long>(r.dropped_key_form_names));
    return 0;
  });
}

int print_bundle(const kiln::Result<admin::BundleSummary>& sum, bool as_json) {
  return print(sum, as_json, [](const admin::BundleSummary& s) {
    if (s.exported)
      std::printf("exported %zu closures, %zu jobs, %zu images, %zu names to %s (%s)\n",
                  s.closures, s.jobs, s.images, s.names, shown(s.file).c_str(),
                  human_size(int64_t(s.bytes)).c_str());
    else
      std::printf("imported %zu closures, %zu jobs, %zu images, %zu names from %s\n", s.closures,
                  s.jobs, s.images, s.names, shown(s.file).c_str());
    return 0;
  });
}

// What this machine could load, and for the rest what prevents it.
int print_portability(const kiln::Result<admin::Portability>& r, bool as_json) {
  return print(r, as_json, [](const admin::Portability& p) {
    std::printf("%zu of %zu closures load on this machine\n", p.loadable, p.closures.size());
    for (const auto& c : p.closures) {
      std::string names;
      for (const std::string& n : c.names)
        names += (names.empty() ? "" : ",") + n;
      std::string verdict = c.loadable ? "loads" : "no: " + c.component + " (" + c.reason + ")";
      std::printf("  %s  %-16s %-20s %s\n", c.closure.c_str(), shown(c.target).c_str(),
                  names.empty() ? "-" : shown(names).c_str(), shown(verdict).c_str());
    }
    return 0;
  });
}

int cmd_explain(const Cache& cache, const std::string& a, const std::string& b, bool as_json) {
  return print(admin::explain(cache, a, b), as_json, [](const admin::Explanation& x) {
    if (x.differences.empty()) {
      std::printf("same: every key component of %s and %s agrees\n", shown(x.a).c_str(),
                  shown(x.b).c_str());
      return 0;
    }
    std::printf("%-12s  %-34s  %s\n", "COMPONENT", "A", "B");
    for (const auto& d : x.differences)
      std::printf("%-12s  %-34s  %s\n", shown(d.component).c_str(), shown(d.a).c_str(),
                  shown(d.b).c_str());
    return 0;
  });
}

int cmd_config(const Cache& cache, const std::string& name, const std::string& value,
               bool as_json) {
  auto settings =
      name.empty() ? admin::settings(cache) : admin::set_setting(cache, name, value);
  return print(settings, as_json, [](const admin::Settings& s) {
    std::printf("max_size        %s (%lld bytes, from %s)\nrequire_signed  %d (from %s)\n",
                human_size(s.max_size).c_str(), static_cast<long long>(s.max_size),
                shown(s.max_size_source).c_str(), int(s.require_signed),
                shown(s.require_signed_source).c_str());
    return 0;
  });
}

/// The command line's arguments; which fields a subcommand reads is in
/// add_commands.
struct Args {
  std::string cache_path, what, target, glob, out_path, format;
  std::string max_size, older_than, file, key_b, setting_value;
  std::vector<std::string> which;
  bool as_json = false, read_only = false, zero = false, dot = false, dry_run = false;
  bool check_only = false;
};

/// The subcommands, to ask which one the command line named.
struct Commands {
  CLI::App *ls, *show, *image, *libraries, *library, *dump;
  CLI::App *stats, *graph, *verify, *gc;
  CLI::App *exp, *imp, *portable, *explain, *config;
};

/// The subcommands that read jobs, roots and libraries.
void add_lookup_commands(CLI::App& app, Args& a, Commands& c) {
  c.ls = app.add_subcommand("ls", "list jobs and root names");
  c.ls->add_flag("--json", a.as_json, "JSON output");
  c.ls->add_option("--target", a.target, "only this target");
  c.ls->add_option("--name", a.glob, "only roots whose name matches this glob, and their jobs");
  c.show = app.add_subcommand("show", "show a job (by key) or a root (by name or closure key)");
  c.show->add_option("KEY_OR_NAME", a.what, "job key, closure key or root name")->required();
  c.show->add_option("--target", a.target, "target of the root (default: the first)");
  c.show->add_flag("--json", a.as_json, "JSON output");
  c.image = app.add_subcommand("image", "write a root's linked image (linking it if needed)");
  c.image->add_option("NAME_OR_KEY", a.what, "root name or closure key")->required();
  c.image->add_option("--target", a.target, "target spec")->required();
  c.image->add_option("-o", a.out_path, "output file")->required();
  c.libraries = app.add_subcommand("libraries", "list kernel libraries");
  c.libraries->add_flag("--json", a.as_json, "JSON output");
  c.library = app.add_subcommand(
      "library", "show a kernel library (its roots and jobs), or write its image with -o");
  c.library->add_option("NAME", a.what, "library name")->required();
  c.library->add_option("--target", a.target, "target of the library (default: the first)");
  c.library->add_option("-o", a.out_path, "write the library's linked image here (linking it if "
                                          "needed)");
  c.library->add_flag("--json", a.as_json, "JSON output");
  c.dump = app.add_subcommand("dump", "write a job's artifact to stdout");
  c.dump->add_option("KEY", a.what, "job key")->required();
  c.dump->add_option("--format", a.format, "ptx, bitcode or object")->required();
}

/// The subcommands about the cache as a whole.
void add_cache_commands(CLI::App& app, Args& a, Commands& c) {
  c.stats = app.add_subcommand("stats", "counts, sizes, compression, hits and loads");
  c.stats->add_flag("--json", a.as_json, "JSON output");
  c.stats->add_flag("--zero", a.zero, "reset the hit, miss and load counters first");
  c.graph = app.add_subcommand("graph", "a root's deferred graph");
  c.graph->add_option("NAME_OR_KEY", a.what, "root name or closure key")->required();
  c.graph->add_option("--target", a.target, "target of the root");
  c.graph->add_flag("--json", a.as_json, "JSON output");
  c.graph->add_flag("--dot", a.dot, "Graphviz DOT output");
  c.verify = app.add_subcommand("verify", "check every blob, closure, name and key");
  c.verify->add_flag("--json", a.as_json, "JSON output");
  c.gc = app.add_subcommand("gc", "evict least recently used closures");
  c.gc->add_option("--max-size", a.max_size,
                   "evict until the cache holds at most this (e.g. 500M)");
  c.gc->add_option("--older-than", a.older_than, "evict closures unused this long (e.g. 30d)");
  c.gc->add_flag("--dry-run", a.dry_run, "report what would be evicted; change nothing");
  c.gc->add_flag("--json", a.as_json, "JSON output");
}

/// The subcommands that move closures between caches, compare jobs and
/// change settings.
void add_exchange_commands(CLI::App& app, Args& a, Commands& c) {
  c.exp = app.add_subcommand("export", "write closures, images and names to a bundle");
  c.exp->add_option("FILE", a.file, "bundle file")->required();
  c.exp->add_option("NAME_OR_KEY", a.which, "roots or closure keys (default: every root)");
  c.exp->add_flag("--json", a.as_json, "JSON output");
  c.imp = app.add_subcommand("import", "add a bundle's contents, after validating all");
  c.imp->add_option("FILE", a.file, "bundle file")->required();
  c.imp->add_flag("--json", a.as_json, "JSON output");
  c.imp->add_flag("--check", a.check_only,
                  "write nothing: report which closures this machine could load, and why not");
  c.portable = app.add_subcommand(
      "check-portable", "which closures this machine could load, and what prevents the rest");
  c.portable->add_flag("--json", a.as_json, "JSON output");
  c.explain = app.add_subcommand("explain", "which key components of two jobs differ");
  c.explain->add_option("KEY_A", a.what, "job key")->required();
  c.explain->add_option("KEY_B", a.key_b, "job key")->required();
  c.explain->add_flag("--json", a.as_json, "JSON output");
  c.config = app.add_subcommand("config", "show or set the cache's settings");
  c.config->add_option("NAME", a.what, "setting (max_size)");
  c.config->add_option("VALUE", a.setting_value, "new value");
  c.config->add_flag("--json", a.as_json, "JSON output");
}

/// The whole command line, bound to `a`, in the order --help lists it.
Commands add_commands(CLI::App& app, Args& a) {
  // A parse error quotes the arguments, which may hold any byte.
  app.failure_message([](const CLI::App* cli, const CLI::Error& e) {
    const std::string what = e.what(), text = CLI::FailureMessage::simple(cli, e);
    return kiln::tools::shown_message(what) + text.substr(std::min(what.size(), text.size()));
  });
  app.require_subcommand(1);
  app.footer(std::string(kiln::tools::kExitHelp) + "\n\n" + kiln::tools::kJsonHelp);
  app.set_version_flag("--version", kiln::tools::version_line("kiln-inspect"));
  app.add_flag("--read-only", a.read_only,
               "never write the cache (also $KILN_READ_ONLY=1; an unwritable cache is opened "
               "read-only anyway): gc, import, config set and stats --zero then fail");
  app.add_option("--cache", a.cache_path, "cache file (default: $KILN_CACHE, else "
                                          "$XDG_CACHE_HOME/kiln/kiln.db)");
  Commands c{};
  add_lookup_commands(app, a, c);
  add_cache_commands(app, a, c);
  add_exchange_commands(app, a, c);
  return c;
}

/// Parses the command line; a value when the run ends there (--help,
/// --version, a usage error).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  // Looked up before parsing, so that a usage error is JSON too.
  g_json_errors = kiln::tools::json_requested(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) { // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    if (g_json_errors)
      std::cout << kiln::tools::json_text(kiln::tools::error_json(
                       kiln::make_error(kiln::Code::invalid_argument, e.what()), kExitUsage))
                << "\n";
    return kExitUsage;
  }
  return std::nullopt;
}

/// Runs the subcommand the command line named on the opened cache.
int run_command(const Commands& c, const Args& a, const Cache& cache) {
  if (c.ls->parsed())
    return cmd_ls(cache, a.as_json, a.target, a.glob);
  if (c.image->parsed())
    return cmd_image(cache, a.what, a.target, a.out_path);
  if (c.dump->parsed())
    return cmd_dump(cache, a.what, a.format);
  if (c.libraries->parsed())
    return cmd_libraries(cache, a.as_json);
  if (c.library->parsed())
    return cmd_library(cache, a.what, a.target, a.out_path, a.as_json);
  if (c.stats->parsed())
    return cmd_stats(cache, a.as_json, a.zero);
  if (c.graph->parsed())
    return cmd_graph(cache, a.what, a.target, a.as_json, a.dot);
  if (c.verify->parsed())
    return cmd_verify(cache, a.as_json);
  if (c.gc->parsed())
    return cmd_gc(cache, {a.max_size, a.older_than, a.dry_run}, a.as_json);
  if (c.exp->parsed())
    return print_bundle(admin::export_bundle(cache, a.file, a.which), a.as_json);
  if (c.imp->parsed())
    return print_bundle(admin::import_bundle(cache, a.file), a.as_json);
  if (c.portable->parsed())
    return print_portability(admin::check_portable(cache), a.as_json);
  if (c.explain->parsed())
    return cmd_explain(cache, a.what, a.key_b, a.as_json);
  if (c.config->parsed())
    return cmd_config(cache, a.what, a.setting_value, a.as_json);
  return cmd_show(cache, a.what, a.target, a.as_json);
}

int inspect_main(int argc, char** argv) {
  CLI::App app{"Inspect a Kiln cache", "kiln-inspect"};
  Args a;
  const Commands c = add_commands(app, a);
  if (std::optional<int> done = parse_command_line(app, argc, argv))
    return *done;
  if (a.cache_path.empty()) {
    auto d = Cache::default_path();
    if (!d)
      return report(d.error());
    a.cache_path = *d;
  }
  bool have_cache = ::access(a.cache_path.c_str(), F_OK) == 0;
  // The file itself, never a remote tier: what this cache holds.
  const unsigned local = KILN_CACHE_LOCAL_ONLY;
  // A bundle check needs no cache: without one, signing is the environment's.
  if (c.imp->parsed() && a.check_only) {
    if (!have_cache)
      return print_portability(admin::check_bundle(nullptr, a.file), a.as_json);
    auto ro = Cache::open(a.cache_path, KILN_CACHE_READ_ONLY | local);
    if (!ro)
      return report(ro.error());
    return print_portability(admin::check_bundle(&*ro, a.file), a.as_json);
  }
  // Inspecting never creates a cache; importing into a new one does.
  if (!c.imp->parsed() && !have_cache)
    return report(
        kiln::make_error(kiln::Code::not_found, "no cache at '" + a.cache_path + "'"));
  auto opened =
      Cache::open(a.cache_path, (a.read_only ? unsigned(KILN_CACHE_READ_ONLY) : 0u) | local);
  if (!opened)
    return report(opened.error());
  return run_command(c, a, *opened);
}

} // namespace

int main(int argc, char** argv) {
  return kiln::tools::run_guarded("kiln-inspect", argc, argv, inspect_main);
}
