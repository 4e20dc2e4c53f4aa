// Kiln's compile requests and their reports, and the one call that answers
// a request from libkiln alone (compile_on_demand: the request memo without
// LLVM, libkiln-compiler loaded on a miss). Everything declared here is
// defined in libkiln; compiler.hpp adds libkiln-compiler's calls (compile,
// Plan), and jit.hpp the embedding API over both.
#pragma once

#include <kiln/result.hpp>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// One input: a file path, or in-memory bytes (bitcode or textual IR) with a
/// name used in messages.
struct SourceInput {
  std::string name;
  std::string bytes;
  bool in_memory = false;

  static SourceInput file(std::string path) { return {std::move(path), {}, false}; }
  static SourceInput memory(std::string name, std::string bytes) {
    return {std::move(name), std::move(bytes), true};
  }
};

/// A run's progress. While a plan that has taken over a second discovers
/// its job graph, status is "planning", done the jobs extracted and total
/// the jobs found so far (at most four reports a second, and one when
/// discovery ends); then one report per job, done of total.
struct Progress {
  size_t done = 0;
  size_t total = 0;
  std::string entry;
  std::string target;
  /// "compiled", "cached", "failed" or "planning"; or, while this process
  /// waits for jobs that others compile, "waiting for pid N on HOST, S s"
  /// (the longest wait; "(and K more jobs)" when there are more).
  std::string status;
};

/// Whether $KILN_MUST_HIT asks for must-hit mode (set, and not "0"): the
/// default of CompileRequest::must_hit and JitOptions::must_hit.
bool must_hit_from_environment();

struct CompileRequest {
  std::vector<SourceInput> inputs;
  std::vector<std::string> entries;          ///< empty: every exported function
  std::vector<std::string> targets{"host"};  ///< target specs
  int opt_level = 2;                         ///< 0..3
  bool debug = false;                        ///< keep debug info
  unsigned jobs = 0;                         ///< parallel compiles; 0: hardware threads
  bool link_images = true;                   ///< link an image per root after compiling
  /// A kernel library: when not empty, the request's roots for each target
  /// are also recorded under this name as one library, loaded as one image
  /// (kiln_library_load); its image is linked with the roots' when
  /// link_images is set.
  std::string library;
  /// The shared tier: redis://[user:password@]host[:port][/db][?options];
  /// empty: $KILN_REMOTE; "off": none. Jobs, closures and images the local
  /// cache lacks are fetched from it; what is compiled or linked is published.
  std::string remote;
  bool remote_read_only = false; ///< fetch from the tier, never publish
  /// Sharding: compile only the jobs whose key falls in shard_index of
  /// shard_count (0-based); the others are left to other machines.
  unsigned shard_index = 0;
  unsigned shard_count = 1;
  /// Called (serialised) after each job, and while a slow plan discovers
  /// its jobs (Progress); may be empty.
  std::function<void(const Progress&)> progress;
  /// Must-hit mode, for production: a request that would compile any job
  /// fails before compiling with `not_found`, naming the first missing job
  /// and how its key differs from the nearest cached one. Memo hits and
  /// fully cached plans are answered as usual.
  bool must_hit = must_hit_from_environment();
};

enum class JobStatus { compiled, cached, failed };
const char* job_status_name(JobStatus s);

struct JobReport {
  std::string key; ///< 32 hex
  std::string entry;
  std::string target;
  std::string symbol;
  std::string triple;   ///< the resolved target: part of the key
  std::string cpu;
  std::string features;
  std::string options;
  std::string module_hash;
  std::string toolchain;
  JobStatus status = JobStatus::failed;
  std::string error;                                    ///< when failed
  std::vector<std::string> warnings; ///< LLVM's, when compiled here (a loop not unrolled, ...)
  std::vector<std::pair<std::string, std::string>> refs; ///< symbol → child key
  double compile_ms = 0;
  bool remote = false;      ///< status cached: fetched from the remote tier just now
  bool other_shard = false; ///< status cached: neither here nor remote; another shard's
};

struct RootReport {
  std::string name;
  std::string target;
  std::string closure; ///< 32 hex; empty if a member failed
  bool image = false;  ///< an image is linked and cached
  std::string note;    ///< why no image was linked (e.g. no nvJitLink here), or that
                       ///< the root is left to other shards
  std::string error;
  std::string unit;    ///< the input file names the root came from
  /// Set when this precompile moved the name from another closure: that
  /// closure (32 hex) and the unit it came from (empty if unknown).
  std::string previous_closure;
  std::string previous_unit;
};

/// A kernel library the request recorded (CompileRequest::library), one per
/// target.
struct LibraryReport {
  std::string name;
  std::string target;
  std::string closure;  ///< 32 hex: the union of the roots' closures; empty on error
  size_t roots = 0;     ///< how many roots it holds
  size_t members = 0;   ///< how many jobs its image links
  bool image = false;   ///< its image is linked and cached
  std::string note;     ///< why no image was linked
  std::string error;    ///< why it was not recorded (a root failed, two kernels share a name)
};

struct CompileReport {
  std::vector<JobReport> jobs;   ///< every distinct job, in discovery order
  std::vector<RootReport> roots;
  std::vector<LibraryReport> libraries;
  size_t evicted_closures = 0; ///< closures the size limit evicted afterwards
  bool memo_hit = false;       ///< answered from the request memo: nothing parsed
  std::vector<std::string> warnings; ///< e.g. IR built for another GPU than its target
  bool ok() const;             ///< (defined in libkiln)
  /// The first failed job, else root, else library, as an error naming it
  /// (code internal: their own codes are not kept); nullopt when ok().
  /// (defined in libkiln)
  std::optional<Error> first_failure() const;
};

/// kiln::compile (compiler.hpp) for a process that does not link
/// libkiln-compiler: a memo hit needs no LLVM; a miss loads libkiln-compiler from
/// beside libkiln (or $KILN_COMPILER_LIBRARY) and compiles.
Result<CompileReport> compile_on_demand(const CompileRequest& request,
                                        const std::string& cache_path);

} // namespace kiln
