// Kiln cache administration, C++ API: what kiln-inspect shows and does, as
// library calls over an open kiln::Cache. Each call reads (or, for gc,
// import, set_setting and stats with zero_first, writes) the cache once and
// returns one view; `to_json` renders a view as the JSON that kiln-inspect
// --json and the C API (kiln/admin.h) print, strings written as kiln/text.hpp
// says. Keys are 32 lowercase hex digits. Needs no LLVM.
//
// A call that writes is refused on a read-only cache (`unavailable`, naming
// what was refused); a writing call leaves the file checkpointed at close.
#pragma once

#include <kiln/kiln.hpp>
#include <kiln/result.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace kiln::admin {

struct Artifact {
  std::string format; ///< "ptx", "cubin", "bitcode", "object", ...
  int64_t raw_size = 0;
  int64_t stored_size = 0;
};

/// An open deferred reference of a job: `symbol` is satisfied by `entry`.
struct Reference {
  std::string symbol;
  std::string entry;
};

/// A stored job, with its key components.
struct Job {
  std::string key, entry, target, options, toolchain, module_hash, symbol, triple, cpu;
  double compile_ms = 0;
  std::vector<Artifact> artifacts;
  std::vector<Reference> refs;
};

/// A job of a listing. Its artifacts and references are read apart from the
/// rest, and either may fail on a damaged file while the listing stands.
struct ListedJob {
  Job job; ///< without artifacts and refs: those are below
  Result<std::vector<Artifact>> artifacts = std::vector<Artifact>{};
  Result<std::vector<Reference>> refs = std::vector<Reference>{};
};

struct Name {
  std::string name, target, closure;
};

/// Which jobs and names a listing keeps; empty fields keep everything.
struct ListFilter {
  std::string target;    ///< that target's jobs and names
  std::string name_glob; ///< names matching this fnmatch glob, and the jobs their closures hold
};

struct Listing {
  std::vector<ListedJob> jobs; ///< by target, entry, key
  std::vector<Name> names;     ///< by name, then target
};

/// A job of a closure, and the symbol it defines there.
struct Member {
  std::string symbol, entry, key;
};

/// A root: the closure a name points at (name empty when found by key).
struct Root {
  std::string name, target, closure, root_job;
  std::string unit; ///< input file names the name came from; empty if unknown
  std::vector<Member> members;
};

/// What `show` found: a job (by job key) or a root (by name or closure key).
using Entry = std::variant<Job, Root>;

/// A closure's members as nodes and their deferred references as edges.
struct Graph {
  struct Edge {
    std::string from, to;
    std::string symbol; ///< the deferred symbol `to` defines
  };
  std::string closure, root_job, target;
  std::vector<Member> members;
  std::vector<Edge> edges; ///< by member, then by reference
};

struct Library {
  std::string name, target, closure;
  std::vector<std::string> roots;
  std::vector<Member> members; ///< filled by `library`, not by `libraries`
  size_t images = 0;           ///< stored images of its closure (`library` only)
};

/// An image written to a file by export_image or export_library_image.
struct ExportedImage {
  std::string closure, target, path;
  size_t members = 0;
  size_t bytes = 0;
};

struct Counters {
  int64_t job_hits = 0, job_misses = 0, image_hits = 0, image_misses = 0, loads = 0;
  int64_t remote_hits = 0, remote_misses = 0, remote_bytes_in = 0, remote_bytes_out = 0,
          remote_errors = 0;
};

struct Stats {
  std::string cache; ///< the file's path
  int64_t jobs = 0, closures = 0, images = 0, names = 0;
  int64_t stored_bytes = 0; ///< compressed blob bytes, with their dictionaries
  int64_t raw_bytes = 0;
  int64_t file_bytes = 0; ///< the database file's pages
  int64_t live_bytes = 0; ///< pages in use
  int64_t max_size = 0;   ///< the size limit in force
  double ratio = 0;       ///< stored over raw; 0 when nothing is stored
  std::vector<std::pair<std::string, int64_t>> jobs_per_target;
  Counters counters;
};

struct VerifyReport {
  std::vector<CacheProblem> problems; ///< none when the cache is healthy
  size_t jobs = 0, closures = 0;
  int schema = 0;
  bool ok() const { return problems.empty(); }
};

/// gc's limits as a user writes them: a size ("500M") and an age ("30d");
/// empty leaves that limit unset, and with neither the cache's own size
/// limit applies. Malformed text is `invalid_argument`.
struct GcOptions {
  std::string max_size, older_than;
  bool dry_run = false;
};

struct GcReport {
  bool dry_run = false;
  std::vector<std::string> evicted_closures; ///< least recently used first
  int64_t evicted_jobs = 0, evicted_images = 0;
  int64_t dropped_key_form_names = 0; ///< name and library rows of key form, never consulted
  int64_t bytes_before = 0, bytes_after = 0; ///< live bytes
};

/// What one export or import moved (bytes: the bundle file's size, export
/// only).
struct BundleSummary {
  std::string file;
  size_t closures = 0, jobs = 0, images = 0, names = 0, bytes = 0;
  bool exported = false;
};

/// Whether this machine could load a closure, and if not what prevents it.
struct ClosurePortability {
  std::string closure, target, cpu;
  std::vector<std::string> names;
  bool loadable = false;
  std::string component; ///< "cpu", "gpu", "linker" or "record"; empty when loadable
  std::string reason;
  std::vector<std::string> missing; ///< CPU features this machine lacks
  std::vector<std::string> unknown; ///< CPU features the loader cannot check
};

struct Portability {
  size_t loadable = 0;
  std::vector<ClosurePortability> closures; ///< by target, then closure key
};

struct KeyDifference {
  std::string component, a, b;
};

/// Why two jobs' keys differ (none: every component agrees).
struct Explanation {
  std::string a, b;
  std::vector<KeyDifference> differences;
};

struct Settings {
  int64_t max_size = 0;
  std::string max_size_source; ///< "KILN_CACHE_MAX_SIZE", "cache setting" or "default"
  bool require_signed = false;
  std::string require_signed_source;
};

/// The jobs and root names `filter` keeps.
Result<Listing> list(const Cache& cache, const ListFilter& filter = {});
/// A job by key, else a closure by key, else a root by name for `target`
/// (empty: its first target). A 32-hex string is only ever read as a key.
Result<Entry> show(const Cache& cache, const std::string& what, const std::string& target = {});
/// The deferred graph of a root (name or closure key).
Result<Graph> graph(const Cache& cache, const std::string& what, const std::string& target = {});
/// Every kernel library (roots listed, members not read).
Result<std::vector<Library>> libraries(const Cache& cache);
/// One kernel library with its members (`target` empty: its first target).
Result<Library> library(const Cache& cache, const std::string& name,
                        const std::string& target = {});
/// Writes a root's image (linking it if needed) to `path`, atomically.
Result<ExportedImage> export_image(const Cache& cache, const std::string& what,
                                   const std::string& target, const std::string& path);
/// Writes a kernel library's image to `path` (`target` empty: its first).
Result<ExportedImage> export_library_image(const Cache& cache, const std::string& name,
                                           const std::string& target, const std::string& path);
/// The raw bytes of a job's artifact: "ptx", "bitcode" (bc) or "object".
Result<std::string> dump(const Cache& cache, const std::string& job_key,
                         const std::string& format);
/// Counts, sizes and counters; `zero_first` resets the counters first (a write).
Result<Stats> stats(const Cache& cache, bool zero_first = false);
/// Checks every blob, closure, name and key (as Cache::verify), with counts.
Result<VerifyReport> verify(const Cache& cache);
/// Evicts least recently used closures per `options` (a write; refused on a
/// read-only cache, a dry run too).
Result<GcReport> gc(const Cache& cache, const GcOptions& options);
/// Writes the roots or closure keys `which` (empty: every root) to a bundle.
Result<BundleSummary> export_bundle(const Cache& cache, const std::string& file,
                                    const std::vector<std::string>& which = {});
/// Adds a bundle's contents after validating all of it (a write).
Result<BundleSummary> import_bundle(const Cache& cache, const std::string& file);
/// Which closures of the cache this machine could load.
Result<Portability> check_portable(const Cache& cache);
/// Which closures of a bundle this machine could load; nothing is written.
/// `cache` (may be null) supplies its signing settings.
Result<Portability> check_bundle(const Cache* cache, const std::string& file);
/// Which key components of two stored jobs differ.
Result<Explanation> explain(const Cache& cache, const std::string& key_a,
                            const std::string& key_b);
/// The settings in force and where each comes from.
Result<Settings> settings(const Cache& cache);
/// Sets a setting from what a user typed (max_size "1M", require_signed 0
/// or 1; a write) and returns the settings in force. An empty value only
/// checks the name. A bad name or value is `invalid_argument`.
Result<Settings> set_setting(const Cache& cache, const std::string& name,
                             const std::string& value);

/// A size as the tools print it ("1.5 MiB").
std::string human_size(int64_t bytes);

/// The views as one line of JSON each (kiln-inspect --json).
std::string to_json(const Listing& v);
std::string to_json(const Entry& v);
std::string to_json(const Graph& v);
std::string to_json(const std::vector<Library>& v);
std::string to_json(const Library& v);
std::string to_json(const ExportedImage& v);
std::string to_json(const Stats& v);
std::string to_json(const VerifyReport& v);
std::string to_json(const GcReport& v);
std::string to_json(const BundleSummary& v);
std::string to_json(const Portability& v);
std::string to_json(const Explanation& v);
std::string to_json(const Settings& v);

} // namespace kiln::admin
