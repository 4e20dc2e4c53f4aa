// Kiln's storage, as everything above this layer sees it: the records
// (storage/records.h: the local SQLite cache, storage/local/store.h, or
// another implementation of them) and, optionally, a remote backend shared
// by many machines (storage/remote/remote_backend.h), behind one class. The layers
// above include no header of storage/local/ (tests/layers checks it).
//
// Read-through: a local miss of a job, closure (with its member jobs), name
// or image asks the remote; a fetched value is a bundle (storage/bundle.h)
// and is checked like an import before it is stored locally (its signature
// too: storage/signing.h; values are signed when a key is set). Write-back:
// what is compiled, recorded or linked here is published, except in
// read-only remote mode. Fail-open: the first failed remote call disables
// the remote for the rest of the process, with one notice on stderr; nothing
// remote ever fails a precompile or a load. Content-addressed entries never
// change, so no locking is needed between machines; names (mutable) are
// published separately.
#pragma once

#include "storage/records.h"
#include "storage/remote/remote_backend.h"
#include "storage/signing.h"

#include <kiln/result.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kiln::storage {

/// The cache file at `path`, opened as records alone (no remote), as
/// Store::open (storage/local/store.h) opens it: created if need be, its
/// files checked before SQLite reads them, migrated; `mode` says whether it
/// may be written.
Result<std::unique_ptr<Records>> open_records(const std::string& path,
                                              OpenMode mode = OpenMode::automatic);

/// Where find_job found a job.
enum class Found { nowhere, local, remote };

class Storage {
public:
  /// Over open records (a local cache), with `remote` (no backend: local
  /// only), signing what it publishes and checking what it fetches per
  /// `signing`.
  explicit Storage(std::unique_ptr<Records> local, remote::Remote remote = {},
                   Signing signing = {});
  /// Over records someone else owns, without a remote.
  explicit Storage(Records& local);
  /// Over records someone else owns, with `remote` and `signing`.
  Storage(Records& local, remote::Remote remote, Signing signing);
  /// Virtual: a Storage is made in libkiln and may be deleted in
  /// libkiln-compiler, which calls no destructor of libkiln's by name
  /// (bridge/bridge.h).
  virtual ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// Opens the local cache at `path` with the remote configured by
  /// `remote_url`, else $KILN_REMOTE (remote::configured): a bad remote URL
  /// is reported before the cache is opened. With a remote, signing is
  /// signing_for(the cache): a malformed $KILN_SIGNING_KEY is an error.
  /// `mode`: Store::open's.
  static Result<std::unique_ptr<Storage>> open(const std::string& path,
                                               const std::string& remote_url = "",
                                               bool remote_read_only = false,
                                               OpenMode mode = OpenMode::automatic);

  /// Over a local cache someone else owns, with `remote` and the signing
  /// signing_of gives them.
  static Result<std::unique_ptr<Storage>> over(Records& local, remote::Remote remote);

  /// Closes the local records it owns (Records::close) and reports the
  /// remote's rejected values; returns the records' error. Destroying it
  /// unclosed closes it and drops the error.
  Status close();

  /// The local records, for what only they hold (usage, settings, gc,
  /// memos, leases) and what is read without the remote.
  Records& records() { return *local_; }
  /// True if a remote is configured (it may have been disabled since).
  bool has_remote() const { return backend_ != nullptr; }

  // --- read-through: the local cache, else the remote (the value stored
  // locally once checked). Thread-safe. ------------------------------------
  /// Whether the job with every artifact in `formats` is here, or was
  /// fetched just now. A local error is returned; a remote one is a miss.
  Result<Found> find_job(const Hash128& key, const std::vector<std::string>& formats);
  /// The closure, with its members' entries; a fetched closure brings every
  /// member job the local cache lacks.
  Result<ClosureRecord> get_closure(const Hash128& key);
  /// The closure a root name names for `target`; a fetched name brings its
  /// closure and their jobs. On a miss, the local cache's error. A key-form
  /// string names no root, and is not asked of the remote.
  Result<Hash128> resolve_name(const std::string& name, const std::string& target);
  /// A sound image of `closure` (members' entries filled, as get_closure
  /// gives it) for `arch`: stored (a damaged one counts as absent), else
  /// fetched and checked. A read-only local cache still gets a fetched one.
  /// nullopt: neither has one.
  Result<std::optional<std::string>> get_image(const ClosureRecord& closure,
                                               const std::string& arch);

  // --- write-back -------------------------------------------------------
  /// Stores the job locally and, once stored, publishes it.
  Status put_job(const JobRecord& job, const std::vector<Artifact>& artifacts,
                 const std::vector<JobRef>& refs);
  /// Stores the image locally and publishes it, even if the local store
  /// failed (returned: the caller decides whether that matters).
  Status put_image(const ImageKey& key, const std::string& format, const std::string& bytes);
  /// Publishes what is already decided; no-ops without a remote, in
  /// read-only mode or once the remote is disabled.
  void publish_job(const Hash128& key); ///< read back from the local cache
  void publish_closure(const ClosureRecord& closure);
  void publish_name(const NameRecord& name);
  void publish_image(const ImageRecord& image);

  /// Leases in the remote tier: single-flight across machines
  /// (storage/single_flight.h). Each call is nullopt once the remote cannot
  /// take leases (none configured, read-only, disabled, or no leases in its
  /// backend); a failed call disables the remote, with its one notice.
  class Leases {
  public:
    /// Whether leases can be asked for now.
    bool available();
    /// Takes the lease on `key` for `holder` for `term`: true if taken.
    std::optional<bool> take(const Hash128& key, const std::string& holder,
                             std::chrono::milliseconds term);
    /// Extends `holder`'s leases on `keys`: false for each it lost.
    std::optional<std::vector<bool>> renew(const std::vector<Hash128>& keys,
                                           const std::string& holder,
                                           std::chrono::milliseconds term);
    void release(const Hash128& key, const std::string& holder);

  private:
    friend class Storage;
    explicit Leases(Storage& s) : s_(s) {}
    Storage& s_;
  };
  Leases& leases() { return leases_; }

  /// Adds the remote counters (remote_* fields) since the last call to
  /// `into`.
  void take_remote_counters(Counters& into);

  /// The remote key of an entry: <prefix>:v<bundle version>:<kind>:<id>.
  std::string remote_key(const std::string& kind, const std::string& id) const;

private:
  /// The signing for a Storage over `local` and `remote`: signing_for(local)
  /// with a backend (a malformed $KILN_SIGNING_KEY is an error), none
  /// without. Whoever builds a Storage with a remote passes this.
  static Result<Signing> signing_of(Records& local, const remote::Remote& remote);
  // Remote calls, with mu_ held; each is a miss once the remote is disabled.
  std::optional<std::string> remote_get(const std::string& key);
  void remote_put(const std::string& key, const std::string& value);
  void fail(const std::string& why);
  void reject(const std::string& what, const std::string& why);
  bool publishing() const;
  /// The remote's value under (kind, id), decoded, holding exactly one
  /// record that `is_it` accepts; nullopt on a miss or a rejected value.
  std::optional<BundleData> fetch_one(const std::string& kind, const std::string& id,
                                      const std::string& what,
                                      const std::function<bool(const BundleData&)>& is_it);
  bool fetch_job(const Hash128& key, const std::vector<std::string>& formats);
  bool fetch_closure(const Hash128& key, const std::vector<NameRecord>& names);
  std::optional<Hash128> fetch_name(const std::string& name, const std::string& target);
  std::optional<std::string> fetch_image(const ClosureRecord& closure, const std::string& arch);
  std::string encode(const BundleData& data) const;

  std::unique_ptr<Records> owned_;
  Records* local_;
  std::unique_ptr<remote::Backend> backend_;
  remote::Options options_;
  Signing signing_;
  std::mutex mu_; ///< guards the remote: backend_'s calls, disabled_, counters_
  bool disabled_ = false;
  /// Rejected values after the first, whose warning says more follow: one
  /// line sums them up when the storage closes, with the last one's cause.
  int64_t rejections_ = 0;
  int64_t rejected_quietly_ = 0;
  std::string last_rejection_;
  Counters counters_;
  Leases leases_{*this};
  bool closed_ = false;
};

/// The id of a name's entry in the remote tier: names and targets may hold
/// ':' and arbitrary bytes, so the key hashes them; the value carries them
/// in clear.
std::string remote_name_id(const std::string& name, const std::string& target);

} // namespace kiln::storage
