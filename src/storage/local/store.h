// The cache file: one SQLite database holding jobs, their artifacts and open
// deferred symbols, closures, linked images and names. Content-addressed rows
// are written once (a concurrent duplicate insert is ignored); every blob is
// zstd-compressed and carries an XXH3-64 checksum that is checked on read.
// Blobs of a kind (artifacts or images of one format) are compressed with a
// zstd dictionary trained on the cache's own blobs of that kind once there
// are enough of them; dictionaries are stored in the file and never change.
// One transaction per job: a failed or interrupted write leaves nothing.
#pragma once

#include "storage/local/codec.h"
#include "storage/local/database.h"
#include "storage/file_trust.h"
#include "storage/memory_images.h"
#include "storage/records.h"
#include "support/hash.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::storage {

class Bound;

/// One connection to a cache file: the records (storage/records.h) as the
/// database part (database.h), the blob codec (codec.h), and the record
/// groups, each a source of its own that owns its SQL. Thread-safe: every
/// call takes the store's lock. Several processes may open the same file at
/// once. What Records says of a method holds here; what is said below is
/// what the file adds.
///
/// The store is one connection and one lock, so it implements every role
/// (records.h) itself; its role methods are private, reached only through
/// the roles (store.jobs().get_job(...)), and each role's are defined in a
/// file of their own: jobs.cpp, closures.cpp (closures and names),
/// images.cpp and libraries.cpp, request_memos.cpp, claims.cpp, and
/// usage_rows.cpp, gc_rows.cpp, verify_rows.cpp and transfer (upkeep).
class Store final : public Records,
                    private Jobs,
                    private Closures,
                    private Names,
                    private Images,
                    private Memos,
                    private Claims,
                    private Upkeep {
public:
  /// Opens or creates the cache at `path` (parent directories are created
  /// 0700, a new file 0600) and migrates it to the current schema.
  /// A file that is not a Kiln cache, or a newer schema, is refused
  /// unmodified. Before SQLite reads anything, the file, its side files and
  /// its directory must pass check_cache_files (storage/file_trust.h);
  /// a symbolic link at `path` is refused and nothing is created through it.
  ///
  /// Read-only: SQLite opens the file read-only, with shared locks, and
  /// sees every commit; nothing is ever written or migrated (SQLite may
  /// create the WAL's empty side files), so an older schema is refused; a
  /// write fails as `unavailable`, except that counters and recency are
  /// dropped and a relinked image is kept in memory for this connection's
  /// life. A WAL file whose side files are missing and cannot be created
  /// here (another user's directory, a read-only mount) is read immutable,
  /// and reopened as soon as a writer appears or the file changes.
  static Result<std::unique_ptr<Store>> open(const std::string& path,
                                             OpenMode mode = OpenMode::automatic);
  /// Virtual (Records'): a Store opened through libkiln may be deleted in
  /// libkiln-compiler (bridge/bridge.h).
  ~Store() override;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const override { return db_->path(); }
  /// True if opened read-only (asked for, or the file was not writable).
  bool read_only() const override { return db_->read_only(); }
  /// Why it is read-only ("" when it is not).
  const std::string& read_only_reason() const override { return db_->read_only_reason(); }
  /// The error a write to a read-only cache gets.
  Error read_only_error(const std::string& what) const override;
  /// The file as this connection sees it now: two equal stamps mean every
  /// read made between them gives what it gave then (a handle's warm
  /// images are kept while it holds: runtime/warm.h).
  Result<DataStamp> data_stamp() override;

  /// For a process that mostly reads (the loader): closing does not
  /// checkpoint the WAL and pay its fsyncs; the next writer's checkpoint, or
  /// the next opener's recovery, takes its few writes (recency, counters, an
  /// image it linked). Nor does it compact. Other connections (precompiles,
  /// imports, gc, inspection) compact if they wrote, and the last one to
  /// close checkpoints the WAL and removes the -wal and -shm files: a quiet
  /// cache is one file that holds all their content. A cache other users
  /// can read keeps both, the WAL emptied, for their read-only opens.
  void defer_checkpoint() override;
  /// Undoes defer_checkpoint: a loading process that compiles into its
  /// cache closes as a writer (it compacts and checkpoints).
  void end_deferral() override;

  /// Ends the connection's work: compacts what this connection wrote
  /// (compact), writes the published images when they are stale
  /// (publish_images) and, unless deferred, checkpoints the WAL and removes
  /// its side files when this is the last connection. Compaction and
  /// publication are optimisations: when one fails the file stays sound,
  /// and its error is returned.
  Status close() override;

  Jobs& jobs() override { return *this; }
  Closures& closures() override { return *this; }
  Names& names() override { return *this; }
  Images& images() override { return *this; }
  Memos& memos() override { return *this; }
  Claims& claims() override { return *this; }
  Upkeep& upkeep() override { return *this; }

  /// Writes the published host images (storage/published/published.h) from what the
  /// file holds now, under its write lock: each host root whose closure,
  /// root job and image are stored and sound. Runs when a writable
  /// connection closes after a commit removed them, or found none. A no-op
  /// when read-only.
  Status publish_images();
  /// Takes in the load log (storage/published/published.h): its closures marked used,
  /// its counters added. A no-op when read-only.
  Status absorb_load_log();

  /// The whole cache checked (verify_cache), its problems alone.
  Result<std::vector<Problem>> verify();

private:
  /// Trains a dictionary for each kind of blob that has none and enough
  /// plain blobs (kMinDictionarySamples, and the dictionary must pay for
  /// itself), and recompresses plain blobs with their kind's dictionary, up
  /// to a bounded amount of work per call. Runs when a connection that wrote
  /// closes (unless defer_checkpoint was called); a no-op when read-only.
  /// Deterministic: the same blobs give the same dictionary and bytes.
  Status compact();

  /// True if the job row and every listed artifact format are present.
  Result<bool> has_job(const Hash128& key, const std::vector<std::string>& formats) override;
  /// Stores a job, its artifacts and open refs in one transaction. A job
  /// already present (same key ⇒ same content) is left as it is.
  Status put_job(const JobRecord& job, const std::vector<Artifact>& artifacts,
                 const std::vector<JobRef>& refs) override;
  Result<JobRecord> get_job(const Hash128& key) override;
  Result<std::vector<JobRecord>> list_jobs() override;
  Result<std::vector<JobRef>> job_refs(const Hash128& key) override;
  Result<std::vector<ArtifactInfo>> artifact_infos(const Hash128& key) override;
  /// The raw bytes of an artifact; checksum mismatch or undecodable blob is
  /// `corrupt`, absence is `not_found`.
  Result<std::string> get_artifact(const Hash128& job, const std::string& format) override;

  /// Records a closure (idempotent) and, in the same transaction, points
  /// each (name, target) at it. A member job that is not in the cache (a
  /// gc evicted it) is `not_found`, naming the job; a name of key form
  /// (core::check_name) is `invalid_argument`, and nothing is recorded.
  Status put_closure(const ClosureRecord& closure, const std::vector<NameRecord>& names) override;
  /// A closure with its members, read in one transaction.
  Result<ClosureRecord> get_closure(const Hash128& key) override;
  /// The closures `keys` name, with their members; a missing one is
  /// `not_found`, naming it.
  Result<ClosureBatch> get_closures(const std::vector<Hash128>& keys) override;
  /// The closure a root name currently names for `target`. A key-form
  /// string names no root: `not_found`, without reading the names.
  Result<Hash128> resolve_name(const std::string& name, const std::string& target) override;
  /// Closures rooted at other builds of `root_job`'s source: root jobs with
  /// the same module, entry, target and options but another key (host code
  /// precompiled on another CPU into a shared cache), newest first, at most
  /// `limit` of them. Reads every job: for a load that was refused, not for
  /// the common path.
  Result<std::vector<Hash128>> other_builds(const Hash128& root_job, size_t limit) override;

  /// Points (name, target) at `name.closure`, recording the unit (input file
  /// names) it came from; the closure must be stored, and the name not of
  /// key form. The previous target, when it was another closure, is returned.
  Result<std::optional<NameMove>> point_name(const NameRecord& name,
                                             const std::string& unit) override;
  /// The closure (name, target) names and the unit it came from, in one
  /// read; nullopt if no such name (or a key-form string).
  Result<std::optional<std::pair<Hash128, std::string>>> read_name(const std::string& name,
                                                                   const std::string& target) override;

  /// What a load needs, read in one transaction so that a concurrent gc
  /// cannot remove a part between reads: the closure a 32-hex closure key
  /// (either case), else a name, names for `target`, its members, and its
  /// newest stored image for `arch` if any (unchecked; empty `arch`: none is
  /// read).
  /// not_found if the name or the closure is not here. A key-form string is
  /// read as a key only, never as a name. With `with_root`, also the
  /// closure's root job (for backends that check it).
  Result<RootRead> read_root(const std::string& name, const std::string& target,
                             const std::string& arch, bool with_root = false) override;

  /// Protects the jobs `keys` (stored or not yet) from gc until
  /// `expires_at` or release_leases(holder): a running precompile's jobs,
  /// between being stored or found and their closure being recorded.
  Status lease_jobs(const std::string& holder, const std::vector<Hash128>& keys,
                    int64_t expires_at) override;
  Status release_leases(const std::string& holder) override;

  /// Claims (local/claims.cpp, storage/single_flight.h).
  Result<std::vector<ClaimState>> claim(const ClaimHolder& me, const std::vector<Hash128>& keys,
                                        const std::vector<ClaimState>& lapsed) override;
  Result<std::vector<ClaimState>> read_claims() override;
  Status renew_claims(const std::string& holder) override;
  Status release_claims(const std::string& holder, const std::vector<Hash128>& keys) override;
  /// Every target a name is precompiled for (none for a key-form string).
  Result<std::vector<NameRecord>> names_for(const std::string& name) override;
  Result<std::vector<NameRecord>> list_names() override;

  // --- kernel libraries: a request's roots for one target, loaded as one
  // image; the closure is the union of theirs (core::library_closure). ------
  /// Records the closure (idempotent) and points (name, target) at it, with
  /// its root names, in one transaction. A member job that is not in the
  /// cache is `not_found`, and a key-form name `invalid_argument`, as in
  /// put_closure.
  Status put_library(const ClosureRecord& closure, const LibraryRecord& library) override;
  /// not_found if no library of that name is recorded for `target`.
  Result<LibraryRecord> get_library(const std::string& name, const std::string& target) override;
  /// Every target the library is recorded for; every library (empty name).
  Result<std::vector<LibraryRecord>> list_libraries(const std::string& name = "") override;

  Status put_image(const ImageKey& key, const std::string& format, const std::string& bytes) override;
  /// The raw bytes of an image: not_found if absent, corrupt if damaged.
  Result<std::string> get_image(const ImageKey& key) override;
  /// The newest image of a closure for `arch`, whatever linker made it: the
  /// warm path, which must not load a linker just to learn its version.
  Result<std::string> get_image_any_linker(const Hash128& closure, const std::string& arch) override;

  // --- upkeep ---------------------------------------------------------------
  Status zero_counters() override;
  Status take_in_loads() override { return absorb_load_log(); }
  /// Usage in one transaction: the counters added, and each closure marked
  /// used at `when` (a closure already marked then keeps its page as it is).
  Status record_usage(const std::vector<Hash128>& closures, int64_t when,
                      const Counters& delta) override;
  Result<Stats> stats() override;
  /// Pages in use, in bytes: cheap (two pragmas), for the automatic limit.
  Result<int64_t> live_bytes() override;
  Result<std::string> setting(const std::string& name) override; ///< not_found if unset
  Status set_setting(const std::string& name, const std::string& value) override;
  /// Evicts per `options` (storage/gc.h), in one transaction.
  Result<GcReport> gc(const GcOptions& options) override;
  /// One gc; gc() runs it again after releasing the full disk's reserve.
  Result<GcReport> gc_once(const GcOptions& options);
  Status check_rows(std::vector<Problem>& out) override;
  /// Every closure, by key.
  Result<std::vector<ClosureRecord>> list_closures() override;
  /// A closure's images, each checked against its checksum.
  Result<std::vector<ImageRecord>> images_of(const Hash128& closure) override;
  /// Writes everything in one transaction; rows already present are kept.
  Status put_bundle(const BundleData& data) override;

  // --- memos: a whole precompile request (its inputs' bytes, entries,
  // targets, options, toolchain) → the closures its roots resolved to. A
  // repeated request is answered from here without parsing its IR. -------
  /// not_found if absent; the caller checks deps and that the closures
  /// still exist.
  Result<Memo> get_memo(const Hash128& key) override;
  Status put_memo(const Hash128& key, const Memo& memo) override;

  explicit Store(std::unique_ptr<Database> db);
  Status insert_job_rows(const JobRecord& job, const std::vector<Artifact>& artifacts,
                         const std::vector<Packed>& packed, const std::vector<JobRef>& refs);
  /// The id of a job's target description and toolchain, inserted if new;
  /// call inside a write transaction.
  Result<int64_t> target_id(const JobRecord& job);
  Status insert_closure_rows(const ClosureRecord& closure, const std::vector<NameRecord>& names,
                             int64_t now);
  /// The closure row and its members (Code::corrupt if it has none); call
  /// inside a transaction, with the lock held.
  Result<ClosureRecord> read_closure_rows(const Hash128& key);
  /// A closure's root and target into `out`; returns its member set's key,
  /// nullopt for a lone root (its one member is its root job).
  Result<std::optional<Hash128>> read_closure_head(const Hash128& key, ClosureRecord& out);
  /// A member set's rows (a lone root's one member without `set`), with
  /// their entries, in symbol order; none is `corrupt`, naming `closure`.
  Status read_member_rows(const std::optional<Hash128>& set, const ClosureRecord& closure,
                          std::vector<ClosureMember>& out);
  Result<JobRecord> read_job_row(const Hash128& key); ///< get_job under the caller's lock
  /// get_library under the caller's lock and transaction.
  Result<LibraryRecord> read_library(const std::string& name, const std::string& target);
  Status insert_image_row(const ImageRecord& image, const Packed& packed);
  /// The image_links row of `arch` and `linker`, added if there is none.
  Result<int64_t> image_link_id(const std::string& arch, const std::string& linker);
  // --- the database part and the codec, under the lock -----------------------
  Result<sqlite3_stmt*> prepare(const char* sql) { return db_->prepare(sql); }
  /// Whether the claims table exists (the first claim makes it).
  Result<bool> has_claims();
  Status exec(const char* sql) { return db_->exec(sql); }
  Result<int64_t> count(const char* sql) { return db_->count(sql); }
  Error db_error(const std::string& what) const { return db_->db_error(what); }
  Status transaction(const std::function<Status()>& body) { return db_->transaction(body); }
  Status read_transaction(const std::function<Status()>& body) {
    return db_->read_transaction(body);
  }
  Result<bool> refresh() { return db_->refresh(); }
  std::shared_ptr<const Dictionary> writing_dictionary(const std::string& kind) {
    return codec_.writing_dictionary(kind);
  }
  static Packed pack_with(const Dictionary* dict, const std::string& raw) {
    return BlobCodec::pack_with(dict, raw);
  }
  Result<std::string> unpack(const std::string& data, int64_t raw_size, int64_t checksum,
                             int64_t dict, const std::string& what) {
    return codec_.unpack(data, raw_size, checksum, dict, what);
  }
  /// compact() for one kind, with its count of plain blobs.
  Status compact_kind(bool image, const std::string& format, int64_t plain, int64_t& budget);
  /// A new dictionary for a kind, trained on its `plain` blobs, if one pays
  /// for itself; null if not (the attempt is recorded).
  Result<std::shared_ptr<const Dictionary>> train_dictionary(bool image, const std::string& format,
                                                             int64_t plain);
  /// Read-only put_closure: succeeds only if nothing would change.
  Status check_closure_recorded(const ClosureRecord& closure, const std::vector<NameRecord>& names);
  Result<std::string> step_blob(Bound& b, const std::string& what);
  /// The image of `closure` for `arch` by any linker: its own, else one its
  /// member set's other closures have; the newest, then the greatest linker.
  /// Under mu_. Found by index alone: no temporary table or sort.
  Result<std::string> read_best_image(const Hash128& closure, const std::string& arch,
                                      Hash128* source = nullptr);
  /// read_best_image's choice, not read: the image's row and the closure
  /// whose image it is.
  struct ImageRow {
    int64_t rowid = 0;
    Hash128 owner;
  };
  Result<ImageRow> find_best_image(const Hash128& closure, const std::string& arch);
  /// The image in row `rowid`, read and checked (`what` names it in errors).
  Result<std::string> read_image_row(int64_t rowid, const std::string& what);
  /// read_best_image's last resort: each image for `arch` of a kernel
  /// library that holds every member of `closure`, as (rowid, created_at,
  /// linker, the library's closure).
  Status scan_library_images(
      const Hash128& closure, const std::string& arch,
      const std::function<void(int64_t, int64_t, std::string, const Hash128&)>& found);

  std::unique_ptr<Database> db_;
  bool read_host_root_ = false; ///< read_root was asked for a host target
  BlobCodec codec_;
  /// Read-only: the images this connection linked.
  MemoryImages memory_images_;
  std::mutex mu_;
  bool closed_ = false;
};

} // namespace kiln::storage
