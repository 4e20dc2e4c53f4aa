// What a cache holds, as the layers above storage see it: Records, the
// cache, and its roles (below), one narrow interface per record group. The
// cache file implements them (storage/local/store.h, SQLite); the unit
// tests have an in-memory one (tests/unit/fixtures/memory_records.hpp) that
// fails where they tell it to; and Storage (storage/storage.h) puts a remote
// tier in front of either.
//
// The contract every implementation keeps, and the one the layers above may
// rely on:
//  - content-addressed records (jobs, closures, images) are written once: a
//    second put of the same key is ignored, and never an error;
//  - a closure, library or name is recorded only when every member job is
//    stored (else `not_found`, naming the job) and its names are not of key
//    form (core::check_name; else `invalid_argument`); a failed put records
//    nothing;
//  - absence is `not_found`, damage is `corrupt`, a write to a read-only
//    cache is read_only_error's `unavailable`;
//  - thread-safe: calls may come from any thread.
#pragma once

#include "core/data_model.h"
#include "storage/gc.h"
#include "storage/usage.h"
#include "storage/verify.h"
#include "support/hash.h"
#include "support/units.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::storage {

// The records a cache holds are Kiln's own data model (core/data_model.h).
using core::Artifact;
using core::ArtifactInfo;
using core::BundleData;
using core::ClosureMember;
using core::ClosureRecord;
using core::ImageKey;
using core::ImageRecord;
using core::JobRecord;
using core::JobRef;
using core::LibraryRecord;
using core::NameRecord;

/// A process that claims jobs (storage/single_flight.h): who it is, and how
/// another process on its machine tells whether it still runs.
struct ClaimHolder {
  std::string id;        ///< this run of it: 32 hex, random
  std::string host;      ///< its machine and pid namespace (boot id, namespace)
  std::string host_name; ///< for messages
  int64_t pid = 0;
  int64_t pid_start = 0; ///< its start time (clock ticks after boot), to tell a reused pid
};

/// A claim on a key, as read.
struct ClaimState {
  Hash128 key;
  bool held = false; ///< false: nobody holds it
  ClaimHolder holder;
  int64_t beat = 0;
  int64_t claimed_at_ms = 0; ///< wall clock of the claim, for messages only
};

/// The cache file's schema version this binary writes; older files are
/// migrated at open, newer ones are refused.
int schema_version();

/// How a cache is opened for writing.
enum class OpenMode {
  /// Read-write, creating the file; read-only instead when $KILN_READ_ONLY
  /// is set (not "0"), or when the file or its directory is not writable
  /// (another user's cache, a read-only mount).
  automatic,
  read_write, ///< read-write, creating the file; an unwritable one fails
  read_only,  ///< never writes, never creates
};

/// What a connection sees of the records, in three counters: equal stamps
/// mean that nothing was committed in between, by another connection or by
/// this one, and that the connection was not reopened.
struct DataStamp {
  int64_t version = -1;  ///< commits by other connections (SQLite's data_version)
  int64_t changes = -1;  ///< rows this connection inserted, changed or deleted
  int64_t reconnects = -1;
  bool operator==(const DataStamp&) const = default;
};

// A cache's records in seven roles, each an interface of its own so that a
// caller depends on the role it uses, and a new operation touches one role:
//   Jobs      jobs and their artifacts
//   Closures  closures (a root's set of jobs) and what a load reads of one
//   Names     root names: which closure a (name, target) names now
//   Images    linked images, and kernel libraries (roots linked as one image)
//   Memos     whole requests answered before
//   Claims    who is compiling a job now, and gc leases
//   Upkeep    usage, settings, size limit, gc, self-checks and import
// Records is the cache: the connection's own state (path, mode, stamp,
// close) and the roles. Each role is reached through Records (records.jobs())
// and is never deleted through: its destructor is protected.

/// Closures read together (Closures::get_closures).
struct ClosureBatch {
  /// In the order asked. Only the first closure of each member set holds
  /// the members: the others share them (the roots of a 1,000-function
  /// cycle would otherwise hold 1M).
  std::vector<ClosureRecord> closures;
  /// For each closure, the index of the first one asked with the same
  /// member set (its own index if none came before): closures that share
  /// a set have the same members, read once, and share one image.
  std::vector<size_t> first_of_set;
};

/// What a load needs, read at once so that a concurrent gc cannot remove a
/// part between reads.
struct RootRead {
  ClosureRecord closure;
  std::optional<std::string> image;
  std::optional<JobRecord> root; ///< the closure's root job, when stored
  /// The closure whose image `image` is: the closure's own, a member set
  /// sibling's, or a kernel library's holding it.
  std::optional<Hash128> image_of;
};

/// A name moved from one closure to another by Names::point_name.
struct NameMove {
  std::string name;
  std::string target;
  Hash128 old_closure;
  std::string old_unit; ///< empty if unknown (recorded before units were)
  Hash128 new_closure;
  std::string new_unit;
};

/// A memo's root: the closure a request's root resolved to.
struct MemoRoot {
  std::string name;
  std::string target;
  Hash128 closure;
};
/// A toolchain file the request depended on (ptxas, a device library) and
/// its stamp (memo::file_stamp) when the memo was recorded.
struct MemoDep {
  std::string path;
  std::string stamp;
  bool operator==(const MemoDep&) const = default;
};
/// A whole precompile request (its inputs' bytes, entries, targets,
/// options, toolchain) → the closures its roots resolved to. A repeated
/// request is answered from here without parsing its IR.
struct Memo {
  std::vector<MemoRoot> roots;
  /// A file whose stamp has changed since makes the memo a miss.
  std::vector<MemoDep> deps;
};

class Jobs {
public:
  /// True if the job and every listed artifact format are present.
  virtual Result<bool> has_job(const Hash128& key, const std::vector<std::string>& formats) = 0;
  /// Stores a job, its artifacts and open refs at once. A job already
  /// present (same key ⇒ same content) is left as it is.
  virtual Status put_job(const JobRecord& job, const std::vector<Artifact>& artifacts,
                         const std::vector<JobRef>& refs) = 0;
  virtual Result<JobRecord> get_job(const Hash128& key) = 0;
  virtual Result<std::vector<JobRecord>> list_jobs() = 0;
  virtual Result<std::vector<JobRef>> job_refs(const Hash128& key) = 0;
  virtual Result<std::vector<ArtifactInfo>> artifact_infos(const Hash128& key) = 0;
  /// The raw bytes of an artifact: `corrupt` if damaged, `not_found` if absent.
  virtual Result<std::string> get_artifact(const Hash128& job, const std::string& format) = 0;

protected:
  ~Jobs() = default;
};

class Closures {
public:
  /// Records a closure (idempotent) and points each (name, target) at it,
  /// at once.
  virtual Status put_closure(const ClosureRecord& closure,
                             const std::vector<NameRecord>& names) = 0;
  /// A closure with its members.
  virtual Result<ClosureRecord> get_closure(const Hash128& key) = 0;
  /// The closures `keys` name, with their members; a missing one is
  /// `not_found`, naming it.
  virtual Result<ClosureBatch> get_closures(const std::vector<Hash128>& keys) = 0;
  /// Every closure, by key.
  virtual Result<std::vector<ClosureRecord>> list_closures() = 0;
  /// Closures rooted at other builds of `root_job`'s source (the same
  /// module, entry, target and options, another key: host code precompiled
  /// on another CPU), newest first, at most `limit`. For a refused load,
  /// not for the common path.
  virtual Result<std::vector<Hash128>> other_builds(const Hash128& root_job, size_t limit) = 0;
  /// The closure a 32-hex closure key (either case), else a name, names for
  /// `target`, its members, and its newest image for `arch` if any
  /// (unchecked; empty `arch`: none is read). not_found if the name or the
  /// closure is not here. A key-form string is read as a key only, never as
  /// a name. With `with_root`, also the closure's root job.
  virtual Result<RootRead> read_root(const std::string& name, const std::string& target,
                                     const std::string& arch, bool with_root = false) = 0;

protected:
  ~Closures() = default;
};

class Names {
public:
  /// The closure a root name currently names for `target`. A key-form
  /// string names no root: `not_found`, without reading the names.
  virtual Result<Hash128> resolve_name(const std::string& name, const std::string& target) = 0;
  /// The closure (name, target) names and the unit it came from, in one
  /// read; nullopt if no such name (or a key-form string).
  virtual Result<std::optional<std::pair<Hash128, std::string>>>
  read_name(const std::string& name, const std::string& target) = 0;
  /// The unit the name's current closure came from (read_name's second):
  /// not_found if no such name, empty if unknown.
  Result<std::string> name_unit(const std::string& name, const std::string& target);
  /// Points (name, target) at `name.closure`, recording the unit (input file
  /// names) it came from; the closure must be stored, and the name not of
  /// key form. The previous target, when it was another closure, is returned.
  virtual Result<std::optional<NameMove>> point_name(const NameRecord& name,
                                                     const std::string& unit) = 0;
  /// Every target a name is precompiled for (none for a key-form string).
  virtual Result<std::vector<NameRecord>> names_for(const std::string& name) = 0;
  virtual Result<std::vector<NameRecord>> list_names() = 0;

protected:
  ~Names() = default;
};

/// Linked images, and kernel libraries: a request's roots for one target,
/// loaded as one image; the library's closure is the union of theirs
/// (core::library_closure).
class Images {
public:
  virtual Status put_image(const ImageKey& key, const std::string& format,
                           const std::string& bytes) = 0;
  /// The raw bytes of an image: not_found if absent, corrupt if damaged.
  virtual Result<std::string> get_image(const ImageKey& key) = 0;
  /// The newest image of a closure for `arch`, whatever linker made it.
  virtual Result<std::string> get_image_any_linker(const Hash128& closure,
                                                   const std::string& arch) = 0;
  /// A closure's images, each checked against its checksum.
  virtual Result<std::vector<ImageRecord>> images_of(const Hash128& closure) = 0;
  /// Records the closure (idempotent) and points (name, target) at it,
  /// with its root names, at once.
  virtual Status put_library(const ClosureRecord& closure, const LibraryRecord& library) = 0;
  /// not_found if no library of that name is recorded for `target`.
  virtual Result<LibraryRecord> get_library(const std::string& name, const std::string& target) = 0;
  /// Every target the library is recorded for; every library (empty name).
  virtual Result<std::vector<LibraryRecord>> list_libraries(const std::string& name = "") = 0;

protected:
  ~Images() = default;
};

class Memos {
public:
  /// not_found if absent; the caller checks deps and that the closures
  /// still exist.
  virtual Result<Memo> get_memo(const Hash128& key) = 0;
  virtual Status put_memo(const Hash128& key, const Memo& memo) = 0;

protected:
  ~Memos() = default;
};

/// Who is compiling a job now (storage/single_flight.h), and the leases
/// that keep a running precompile's jobs from gc.
class Claims {
public:
  /// Claims each of `keys` that no one holds, and each of `lapsed` that its
  /// holder still holds at the beat the caller saw (a takeover: the caller
  /// judged that holder dead or stalled). Returns the claims on `keys` after
  /// that, one per key, in order (held by `me`: granted; not held: nobody
  /// holds it). One transaction.
  virtual Result<std::vector<ClaimState>> claim(const ClaimHolder& me,
                                                const std::vector<Hash128>& keys,
                                                const std::vector<ClaimState>& lapsed) = 0;
  /// Every claim held now, by anyone.
  virtual Result<std::vector<ClaimState>> read_claims() = 0;
  /// Bumps the beat of every claim `holder` holds: it is alive.
  virtual Status renew_claims(const std::string& holder) = 0;
  /// Drops `holder`'s claims on `keys` (all of them when `keys` is empty).
  virtual Status release_claims(const std::string& holder, const std::vector<Hash128>& keys) = 0;
  /// Protects the jobs `keys` (stored or not yet) from gc until
  /// `expires_at` or release_leases(holder): a running precompile's jobs,
  /// between being stored or found and their closure being recorded.
  virtual Status lease_jobs(const std::string& holder, const std::vector<Hash128>& keys,
                            int64_t expires_at) = 0;
  virtual Status release_leases(const std::string& holder) = 0;

protected:
  ~Claims() = default;
};

/// Usage, settings, the size limit, gc, the records' checks on themselves,
/// and import.
class Upkeep {
public:
  /// The counters added, and each closure marked used at `when`, at once.
  virtual Status record_usage(const std::vector<Hash128>& closures, int64_t when,
                              const Counters& delta) = 0;
  /// record_usage of counters alone.
  Status add_counters(const Counters& delta) { return record_usage({}, 0, delta); }
  /// record_usage of closures alone.
  Status touch_closures(const std::vector<Hash128>& closures, int64_t when) {
    return record_usage(closures, when, {});
  }
  virtual Status zero_counters() = 0;
  /// Takes in the usage noted beside the records by loads that did not
  /// open them (storage/published/published.h's load log); records without
  /// such a log have none.
  virtual Status take_in_loads() { return Status::ok(); }
  virtual Result<Stats> stats() = 0;
  /// Bytes in use: cheap, for the automatic size limit.
  virtual Result<int64_t> live_bytes() = 0;
  virtual Result<std::string> setting(const std::string& name) = 0; ///< not_found if unset
  virtual Status set_setting(const std::string& name, const std::string& value) = 0;
  /// The size limit in force: $KILN_CACHE_MAX_SIZE, else the max_size
  /// setting, else kDefaultMaxSize. One rule over setting(), whatever holds
  /// the records.
  Result<int64_t> max_size();
  /// Evicts per `options` (storage/gc.h), at once.
  virtual Result<GcReport> gc(const GcOptions& options) = 0;
  /// The checks the records make on themselves (blobs against their
  /// checksums, members present, names' closures present), appended to
  /// `out`; verify_cache (storage/verify.h) adds the checks above them.
  virtual Status check_rows(std::vector<Problem>& out) = 0;
  /// Writes everything at once; records already present are kept.
  virtual Status put_bundle(const BundleData& data) = 0;

protected:
  ~Upkeep() = default;
};

class Records {
public:
  virtual ~Records() = default;

  /// Where the records are: the cache file's path ("" for none).
  virtual const std::string& path() const = 0;
  /// True if nothing may be written (asked for, or the file is not writable).
  virtual bool read_only() const = 0;
  /// Why it is read-only ("" when it is not).
  virtual const std::string& read_only_reason() const = 0;
  /// The error a write to a read-only cache gets.
  virtual Error read_only_error(const std::string& what) const = 0;
  /// The records as this connection sees them now: two equal stamps mean
  /// every read made between them gives what it gave then (a handle's warm
  /// images are kept while it holds: runtime/warm.h).
  virtual Result<DataStamp> data_stamp() = 0;
  /// For a process that mostly reads (the loader): closing pays no
  /// checkpoint or compaction (Store::defer_checkpoint says what that means
  /// for the file). end_deferral undoes it.
  virtual void defer_checkpoint() = 0;
  virtual void end_deferral() = 0;
  /// Ends this connection's work on the records (the file's compaction,
  /// published images and checkpoint: storage/local/store.h) and reports
  /// what failed; the records stay readable until destroyed. Once is
  /// enough: a second call does nothing. Destroying records that were not
  /// closed closes them, and drops the errors.
  virtual Status close() = 0;

  virtual Jobs& jobs() = 0;
  virtual Closures& closures() = 0;
  virtual Names& names() = 0;
  virtual Images& images() = 0;
  virtual Memos& memos() = 0;
  virtual Claims& claims() = 0;
  virtual Upkeep& upkeep() = 0;

protected:
  Records() = default;
  Records(const Records&) = delete;
  Records& operator=(const Records&) = delete;
};

inline Result<std::string> Names::name_unit(const std::string& name, const std::string& target) {
  KILN_TRY_ASSIGN(auto read, read_name(name, target));
  if (!read)
    return make_error(Code::not_found, "no root named '" + name + "' for target '" + target + "'");
  return read->second;
}

// Inline: libkiln-compiler calls it, and has no copy of the storage layer.
inline Result<int64_t> Upkeep::max_size() {
  if (const char* env = std::getenv("KILN_CACHE_MAX_SIZE"); env && *env) {
    auto v = parse_size(env);
    if (!v)
      return v.error().context("KILN_CACHE_MAX_SIZE");
    return v;
  }
  auto s = setting("max_size");
  if (!s)
    return s.error().code == Code::not_found ? Result<int64_t>(kDefaultMaxSize) : s.error();
  return parse_size(*s);
}

} // namespace kiln::storage
