// kiln-precompile: compile every job of a unit the cache lacks, record the
// roots' closures and link their images, so that loading is a cache hit.
// Exit statuses: tools/exit_status.h (1 also when some job failed; the
// others are stored). With --json, a failure of any kind is one JSON object
// on stdout with an "error" and the "exit_status". Names, targets, paths and
// messages are written as tools/safe_text.h says (JSON that keeps every byte;
// text with control bytes escaped).
//
// Code generation and image links run in this process (ARCHITECTURE.md,
// "Crash isolation"): a worker process per job protects a caller's process,
// and this process is Kiln's own. A crash of LLVM here ends the tool with a
// message and exit status 3 (crash_report below).
#include <kiln/request.hpp>
#include <kiln/kiln.hpp>

#include "exit_status.h"
#include "safe_text.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>
#include <csignal>
#include <cstdlib>
#include <malloc.h>
#include <unistd.h>

namespace {

using kiln::tools::kExitFailed;
using kiln::tools::kExitOk;
using kiln::tools::kExitUsage;
using kiln::tools::shown;
using kiln::tools::shown_message;

/// Reports `e` on stderr and, with --json, as a JSON object on stdout.
int fail(const kiln::Error& e, bool json, int status) {
  return kiln::tools::report_error("kiln-precompile", e, status, json);
}

int fail(const kiln::Error& e, bool json) { return fail(e, json, kiln::tools::exit_status(e)); }

int fail_usage(const std::string& msg, bool json) {
  return fail(kiln::make_error(kiln::Code::invalid_argument, msg), json, kExitUsage);
}


// What a crash writes: prepared before anything can crash, since a signal
// handler may only write(2) and _exit.
std::string crash_text, crash_json;

void write_all(int fd, const std::string& s) {
  for (size_t done = 0; done < s.size();) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0)
      return;
    done += size_t(n);
  }
}

extern "C" void on_crash(int sig) {
  const char* what = sig == SIGABRT   ? "SIGABRT"
                     : sig == SIGSEGV ? "SIGSEGV"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGILL  ? "SIGILL"
                                      : "SIGFPE";
  write_all(2, "\nkiln-precompile: error: the compiler crashed this process (");
  write_all(2, what);
  write_all(2, crash_text);
  if (!crash_json.empty())
    write_all(1, crash_json);
  ::_exit(kiln::tools::kExitCrashed);
}

/// Code generation in this process unless the user chose otherwise, and a
/// crash in it reported: LLVM ends a process on some inputs
/// (report_fatal_error, "Cannot select": it prints "LLVM ERROR: ..." and
/// aborts) or crashes in a pass. Front-end bitcode is still read first in a
/// worker ("bitcode": LLVM's reader trusts its input, and a stream that
/// crashes or hangs it is an input error, exit 2).
void compile_in_this_process(bool json) {
  ::setenv("KILN_CODEGEN_ISOLATION", "bitcode", /*overwrite=*/0);
  const std::string message =
      "the compiler crashed this process: LLVM's own message, if any, is above; jobs stored "
      "before the crash are kept. KILN_CODEGEN_ISOLATION=on compiles each job in a worker "
      "process, where such a crash is that job's error";
  crash_text = "); LLVM's own message, if any, is above; jobs stored before the crash are kept. "
               "KILN_CODEGEN_ISOLATION=on compiles each job in a worker process, where such a "
               "crash is that job's error\n";
  if (json)
    crash_json = kiln::tools::json_text(kiln::tools::error_json(
                     kiln::make_error(kiln::Code::internal, message), kiln::tools::kExitCrashed)) +
                 "\n";
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE})
    ::sigaction(sig, &sa, nullptr);
  // A stack overflow in a recursive pass still reports, on the main thread.
  static char alt[64 << 10];
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = sizeof alt;
  ::sigaltstack(&ss, nullptr);
}

/// What the command line asks for.
struct Options {
  std::string cache_path;
  std::vector<std::string> targets, entries, files;
  int opt_level = 2;
  unsigned jobs = 0;
  bool json = false, debug = false, no_link = false, quiet = false, explain = false;
  bool remote_read_only = false, read_only = false, must_hit = false;
  std::string remote, shard, library;
};

/// The command line's options, bound to `o`, in the order --help lists them.
void add_options(CLI::App& app, Options& o) {
  // A parse error quotes the arguments, which may hold any byte.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    const std::string what = e.what(), text = CLI::FailureMessage::simple(a, e);
    return shown_message(what) + text.substr(std::min(what.size(), text.size()));
  });
  app.footer(std::string(kiln::tools::kExitHelp) + "\n\n" + kiln::tools::kJsonHelp);
  app.set_version_flag("--version", kiln::tools::version_line("kiln-precompile"));
  app.add_option("--cache", o.cache_path,
                 "cache file (default: $KILN_CACHE, else $XDG_CACHE_HOME/kiln/kiln.db)");
  app.add_option("--target", o.targets,
                 "target spec, repeatable (default: the GPU the IR was built for, else host)")
      ->allow_extra_args(false);
  app.add_option("--entry", o.entries, "root entry function, repeatable (default: every "
                                       "externally visible function)")
      ->allow_extra_args(false);
  app.add_option("-O", o.opt_level, "optimization level 0..3 (default 2)")
      ->check(CLI::Range(0, 3));
  app.add_option("-j", o.jobs, "parallel compile jobs (default: all cores)");
  app.add_flag("-g", o.debug, "keep debug info");
  app.add_flag("--json", o.json, "print one JSON object describing jobs and roots");
  app.add_flag("--no-link", o.no_link, "do not link images (they are linked at first load)");
  app.add_option("--library", o.library,
                 "also record the roots of each target as kernel library NAME: one image "
                 "holding all their kernels (kiln_library_load)");
  app.add_flag("-q,--quiet", o.quiet, "no progress display");
  app.add_flag("--explain", o.explain, "print each job's key components (with --json: a "
                                       "\"components\" object per job)");
  app.add_option("--remote", o.remote,
                 "shared tier: redis://[user:password@]host[:port][/db][?prefix=P&ttl=S&"
                 "timeout_ms=MS&read_only=1] (default: $KILN_REMOTE; \"off\": none)");
  app.add_flag("--read-only", o.read_only,
               "never write the cache (also $KILN_READ_ONLY=1; an unwritable cache is opened "
               "read-only anyway): fails unless every job and image is already there");
  app.add_flag("--remote-read-only", o.remote_read_only,
               "fetch from the shared tier but publish nothing to it");
  app.add_flag("--must-hit", o.must_hit,
               "fail (exit 1) instead of compiling anything the cache lacks, naming the first "
               "missing job and how its key differs from the nearest cached one (also "
               "$KILN_MUST_HIT=1)");
  app.add_option("--shard", o.shard,
                 "I/N: compile only shard I (1..N) of the jobs, publishing them to the shared "
                 "tier; N machines together fill it");
  app.add_option("FILE", o.files, "LLVM IR (.ll) or bitcode (.bc) files, linked into one unit")
      ->required();
}

/// Parses the command line; a value when the run ends there (--help,
/// --version, a usage error).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  // Looked up before parsing, so that a usage error is JSON too.
  const bool json_errors = kiln::tools::json_requested(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) { // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    if (json_errors)
      std::cout << kiln::tools::json_text(kiln::tools::error_json(
                       kiln::make_error(kiln::Code::invalid_argument, e.what()), kExitUsage))
                << "\n";
    return kExitUsage;
  }
  return std::nullopt;
}

/// --shard I/N as the request's 0-based shard; false when it is not I/N
/// with 1 <= I <= N.
bool set_shard(const std::string& shard, kiln::CompileRequest& req) {
  unsigned i = 0, n = 0;
  char slash = 0, extra = 0;
  if (std::sscanf(shard.c_str(), "%u%c%u%c", &i, &slash, &n, &extra) != 3 || slash != '/' ||
      n == 0 || i == 0 || i > n || shard.find_first_of("+- ") != std::string::npos)
    return false;
  req.shard_index = i - 1;
  req.shard_count = n;
  return true;
}

kiln::CompileRequest request_from(const Options& o) {
  kiln::CompileRequest req;
  // A bad URL is invalid_argument, a usage error, even on a memo hit.
  req.remote = o.remote;
  req.remote_read_only = o.remote_read_only;
  for (const std::string& f : o.files)
    req.inputs.push_back(kiln::SourceInput::file(f));
  req.entries = o.entries;
  // No --target: the unit's own (the GPU its IR was built for, else the host).
  req.targets = o.targets;
  req.opt_level = o.opt_level;
  req.debug = o.debug;
  req.jobs = o.jobs;
  req.link_images = !o.no_link;
  req.library = o.library;
  if (o.must_hit)
    req.must_hit = true;
  return req;
}

/// A plan that takes over a second says how far it has got: on a terminal
/// one line rewritten in place; otherwise (a log) a line every 5 s at most,
/// and the last. Per-job progress is for terminals only.
std::function<void(const kiln::Progress&)> progress_display(bool tty) {
  return [tty, last = std::chrono::steady_clock::time_point()](
             const kiln::Progress& p) mutable {
    if (p.status == "planning") {
      auto now = std::chrono::steady_clock::now();
      if (!tty && p.done < p.total && last != std::chrono::steady_clock::time_point() &&
          now - last < std::chrono::seconds(5))
        return;
      last = now;
      std::fprintf(stderr, "%skiln: planning: %zu jobs found, %zu extracted (%s)%s",
                   tty ? "\r\033[K" : "", p.total, p.done, shown(p.target).c_str(),
                   tty ? "" : "\n");
    } else if (p.status.rfind("waiting", 0) == 0 && !tty) {
      // Jobs other processes compile (single-flight): a log says whom
      // this one waits for, every 5 s at most.
      auto now = std::chrono::steady_clock::now();
      if (last != std::chrono::steady_clock::time_point() &&
          now - last < std::chrono::seconds(5))
        return;
      last = now;
      std::fprintf(stderr, "kiln: [%zu/%zu] %s %s (%s)\n", p.done, p.total,
                   shown(p.status).c_str(), shown(p.entry).c_str(), shown(p.target).c_str());
    } else if (tty) {
      std::fprintf(stderr, "\r\033[K[%zu/%zu] %s %s (%s)", p.done, p.total,
                   shown(p.status).c_str(), shown(p.entry).c_str(), shown(p.target).c_str());
    }
    std::fflush(stderr);
  };
}

/// Warnings, failed jobs, roots without an image, moved names and failed
/// roots and libraries, on stderr whatever the output format.
void print_diagnostics(const kiln::CompileReport& report) {
  for (const std::string& w : report.warnings)
    std::cerr << "kiln-precompile: warning: " << shown_message(w) << "\n";
  for (const kiln::JobReport& j : report.jobs)
    for (const std::string& w : j.warnings)
      std::cerr << "kiln-precompile: warning: job '" << shown(j.entry) << "' (" << shown(j.target)
                << "): " << shown_message(w) << "\n";
  for (const kiln::JobReport& j : report.jobs)
    if (j.status == kiln::JobStatus::failed)
      std::cerr << "kiln-precompile: job " << j.key << " (" << shown(j.entry) << ", "
                << shown(j.target) << ") failed: " << shown_message(j.error) << "\n";
  for (const kiln::RootReport& r : report.roots)
    if (!r.note.empty())
      std::cerr << "kiln-precompile: note: root " << shown(r.name) << " (" << shown(r.target)
                << ") " << (r.closure.empty() ? "is " : "has no image yet: ")
                << shown_message(r.note) << "\n";
  for (const kiln::RootReport& r : report.roots)
    if (!r.previous_closure.empty())
      std::cerr << "kiln-precompile: name " << shown(r.name) << " (" << shown(r.target)
                << ") moved from closure " << r.previous_closure << " (unit "
                << (r.previous_unit.empty() ? "unknown" : shown(r.previous_unit)) << ") to "
                << r.closure << " (unit " << shown(r.unit) << ")\n";
  for (const kiln::RootReport& r : report.roots)
    if (!r.error.empty())
      std::cerr << "kiln-precompile: root " << shown(r.name) << " (" << shown(r.target)
                << "): " << shown_message(r.error) << "\n";
  for (const kiln::LibraryReport& l : report.libraries) {
    if (!l.error.empty())
      std::cerr << "kiln-precompile: " << shown_message(l.error) << "\n";
    else if (!l.note.empty())
      std::cerr << "kiln-precompile: note: library " << shown(l.name) << " (" << shown(l.target)
                << ") has no image yet: " << shown_message(l.note) << "\n";
  }
}

nlohmann::ordered_json job_json(const kiln::JobReport& j, bool explain) {
  nlohmann::ordered_json jj;
  jj["key"] = j.key;
  jj["entry"] = j.entry;
  jj["target"] = j.target;
  jj["status"] = j.other_shard ? "other_shard" : kiln::job_status_name(j.status);
  if (j.remote)
    jj["remote"] = true;
  jj["refs"] = nlohmann::ordered_json::array();
  for (const auto& [sym, key] : j.refs)
    jj["refs"].push_back({{"symbol", sym}, {"key", key}});
  if (j.status == kiln::JobStatus::failed)
    jj["error"] = j.error;
  if (!j.warnings.empty())
    jj["warnings"] = j.warnings;
  if (explain)
    jj["components"] = {{"module_hash", j.module_hash},
                        {"entry", j.entry},
                        {"target", j.target},
                        {"triple", j.triple},
                        {"cpu", j.cpu},
                        {"features", j.features},
                        {"opt_level", j.options.substr(2, 1)},
                        {"debug", j.options.find("-g") != std::string::npos ? "true" : "false"},
                        {"toolchain", j.toolchain}};
  return jj;
}

nlohmann::ordered_json root_json(const kiln::RootReport& r) {
  nlohmann::ordered_json rr;
  rr["name"] = r.name;
  rr["target"] = r.target;
  rr["closure"] = r.closure;
  rr["image"] = r.image;
  if (!r.note.empty())
    rr["note"] = r.note;
  if (!r.error.empty())
    rr["error"] = r.error;
  if (!r.previous_closure.empty())
    rr["name_moved"] = {{"name", r.name},
                        {"target", r.target},
                        {"old_closure", r.previous_closure},
                        {"old_unit", r.previous_unit},
                        {"new_closure", r.closure},
                        {"new_unit", r.unit}};
  return rr;
}

nlohmann::ordered_json library_json(const kiln::LibraryReport& l) {
  nlohmann::ordered_json lj;
  lj["name"] = l.name;
  lj["target"] = l.target;
  lj["closure"] = l.closure;
  lj["roots"] = l.roots;
  lj["members"] = l.members;
  lj["image"] = l.image;
  if (!l.note.empty())
    lj["note"] = l.note;
  if (!l.error.empty())
    lj["error"] = l.error;
  return lj;
}

/// --json: the whole report as one object.
nlohmann::ordered_json report_json(const kiln::CompileReport& report, bool explain) {
  nlohmann::ordered_json out;
  out["jobs"] = nlohmann::ordered_json::array();
  for (const kiln::JobReport& j : report.jobs)
    out["jobs"].push_back(job_json(j, explain));
  if (!report.warnings.empty())
    out["warnings"] = report.warnings;
  out["memo"] = report.memo_hit;
  out["evicted_closures"] = report.evicted_closures;
  out["roots"] = nlohmann::ordered_json::array();
  for (const kiln::RootReport& r : report.roots)
    out["roots"].push_back(root_json(r));
  if (!report.libraries.empty()) {
    out["libraries"] = nlohmann::ordered_json::array();
    for (const kiln::LibraryReport& l : report.libraries)
      out["libraries"].push_back(library_json(l));
  }
  // A failed job or root fails the run: the first one is its error.
  if (!report.ok())
    out.update(kiln::tools::error_json(*report.first_failure(), kExitFailed));
  return out;
}

/// --explain without --json: each job's key components.
void print_explained(const kiln::CompileReport& report) {
  for (const kiln::JobReport& j : report.jobs)
    std::cout << j.key << "  " << kiln::job_status_name(j.status) << "\n"
              << "  module_hash " << j.module_hash << "\n  entry       " << shown(j.entry)
              << "\n  target      " << shown(j.target) << " (" << shown(j.triple) << ", "
              << shown(j.cpu) << ")"
              << "\n  features    " << shown(j.features) << "\n  options     "
              << shown(j.options) << "\n  toolchain   " << shown(j.toolchain) << "\n";
}

/// On a terminal: one line counting the jobs by outcome.
void print_summary(const kiln::CompileReport& report, const std::string& cache_path) {
  size_t compiled = 0, cached = 0, failed = 0, fetched = 0, elsewhere = 0;
  for (const kiln::JobReport& j : report.jobs) {
    compiled += j.status == kiln::JobStatus::compiled;
    cached += j.status == kiln::JobStatus::cached && !j.other_shard;
    fetched += j.remote;
    elsewhere += j.other_shard;
    failed += j.status == kiln::JobStatus::failed;
  }
  std::cerr << "kiln-precompile: " << report.jobs.size() << " jobs (" << compiled
            << " compiled, " << cached << " cached";
  if (fetched)
    std::cerr << " (" << fetched << " from the remote tier)";
  if (elsewhere)
    std::cerr << ", " << elsewhere << " left to other shards";
  std::cerr << ", " << failed << " failed), " << report.roots.size() << " roots in "
            << shown(cache_path) << (report.memo_hit ? " (request memo)" : "") << "\n";
}

int precompile_main(int argc, char** argv) {
  compile_in_this_process(kiln::tools::json_requested(argc, argv));
  // Linking an AMDGPU or host image builds a code generator's per-function
  // tables of a megabyte or more, once per image: kept in the heap between
  // images instead of mapped and faulted in again for each (a tenth of a
  // 200-image link was page faults).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  CLI::App app{"Precompile LLVM IR kernels and their deferred jobs into a Kiln cache",
               "kiln-precompile"};
  Options o;
  add_options(app, o);
  if (std::optional<int> done = parse_command_line(app, argc, argv))
    return *done;

  kiln::CompileRequest req = request_from(o);
  if (!o.shard.empty() && !set_shard(o.shard, req))
    return fail_usage("--shard: expected I/N with 1 <= I <= N (e.g. 2/3), not '" + o.shard + "'",
                      o.json);
  const bool tty = !o.quiet && ::isatty(STDERR_FILENO);
  if (!o.quiet)
    req.progress = progress_display(tty);
  if (o.cache_path.empty()) {
    auto d = kiln::Cache::default_path();
    if (!d)
      return fail(d.error(), o.json);
    o.cache_path = *d;
  }
  // The library opens the cache (on a memo hit or in the compiler) and
  // takes the read-only mode from the environment.
  if (o.read_only)
    ::setenv("KILN_READ_ONLY", "1", 1);
  // The request memo first (no LLVM in this process yet); on a miss the
  // compiler library is loaded, plans (bad input is reported before the
  // cache is written), compiles and memoises.
  auto report = kiln::compile_on_demand(req, o.cache_path);
  if (tty)
    std::fprintf(stderr, "\r\033[K");
  if (!report)
    return fail(report.error(), o.json);

  print_diagnostics(*report);
  if (o.json)
    std::cout << kiln::tools::json_text(report_json(*report, o.explain)) << "\n";
  else if (o.explain)
    print_explained(*report);
  else if (tty)
    print_summary(*report, o.cache_path);
  return report->ok() ? kExitOk : kExitFailed;
}

} // namespace

int main(int argc, char** argv) {
  return kiln::tools::run_guarded("kiln-precompile", argc, argv, precompile_main);
}
