// The cache file's database part: one SQLite connection to a trusted file,
// opened with the pragmas Kiln needs, made from the schema baseline or
// migrated to the current schema (schema/NNNN_*.sql), its prepared statements, its transactions, the WAL's
// life cycle at close, and the fault injection that lets tests fail its
// writes. It knows no record: the store's record groups (jobs.cpp,
// closures.cpp, images.cpp, libraries.cpp, request_memos.cpp, usage.cpp,
// gc.cpp) own their SQL and reach the file through it.
#pragma once

#include "storage/file_trust.h"
#include "storage/records.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::storage {

class PublishedHold;

/// One connection. Not thread-safe: its owner (Store) serialises calls.
class Database {
public:
  /// Opens or creates the cache file at `path` and migrates it (see
  /// Store::open for what is checked and refused).
  static Result<std::unique_ptr<Database>> open(const std::string& path, OpenMode mode);
  /// Closes the connection; the WAL's fate is close_wal()'s.
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }
  const std::string& read_only_reason() const { return read_only_reason_; }
  /// The error a write to a read-only cache gets.
  Error read_only_error(const std::string& what) const;
  /// SQLite's last error, as Kiln's (`corrupt` for a damaged file).
  Error db_error(const std::string& what) const;
  sqlite3* handle() const { return db_; }

  Status exec(const char* sql);
  /// A statement prepared once per connection, keyed by the literal's
  /// address (every caller passes a string literal).
  Result<sqlite3_stmt*> prepare(const char* sql);
  /// The first column of a one-row query.
  Result<int64_t> count(const char* sql);
  /// Runs `body` in a write transaction: committed if it succeeds, else
  /// rolled back.
  Status transaction(const std::function<Status()>& body);
  /// Runs `body` in a read transaction (one snapshot of the file); inside a
  /// caller's transaction, in that one.
  Status read_transaction(const std::function<Status()>& body);
  /// An immutable reader whose files changed since it connected (a writer
  /// appeared, the file was replaced) reconnects, unless a statement is
  /// stepping; true if it did. Outside transactions.
  Result<bool> refresh();
  /// The file as this connection sees it now (an immutable reader refreshed
  /// first). Outside transactions.
  Result<DataStamp> stamp();
  /// Called after refresh() reconnects: what was read through the old
  /// connection (dictionaries) is read again.
  void on_reconnect(std::function<void()> f) { on_reconnect_ = std::move(f); }

  /// While one lives, this connection's commits record usage alone
  /// (recency, counters, leases, memos, settings): what a load reads is
  /// unchanged, and the published images (storage/published/published.h) stay,
  /// stamped anew with the files' state when the last one ends. Every other
  /// commit removes them first.
  class Bookkeeping {
  public:
    explicit Bookkeeping(Database& db) : db_(db) { ++db_.bookkeeping_; }
    ~Bookkeeping() {
      if (--db_.bookkeeping_ == 0)
        db_.renew_published();
    }
    Bookkeeping(const Bookkeeping&) = delete;
    Bookkeeping& operator=(const Bookkeeping&) = delete;

  private:
    Database& db_;
  };
  /// See Store::defer_checkpoint.
  void defer_checkpoint();
  void end_deferral();
  /// What closing this connection owes the file, before the WAL is closed.
  struct Owed {
    /// It wrote and is not a deferring loader: compact what it wrote.
    bool compact = false;
    /// In WAL mode (a local file system: a network one keeps a rollback
    /// journal, and publishes no host images, since its clients may see
    /// another's removal late), and a commit of this connection removed
    /// the published images (or would have: there were none), or a host
    /// load found none current: publish them anew.
    bool publish = false;
  };
  /// Ends the connection's work: `settle` does what is owed (none when
  /// read-only) and its error is returned; then the WAL is left for the
  /// next writer (a loader's), or checkpointed and its side files removed
  /// (the last other connection).
  Status finish(bool read_host_root, const std::function<Status(const Owed&)>& settle);

  /// gc's room on a full disk: deleting rows needs WAL space, so a writer
  /// that creates the cache, and each gc, keep `<cache>-reserve` (128 KiB,
  /// allocated) beside it; a gc that fails for a full disk releases it and
  /// tries again. Both are best effort: false when nothing was done.
  bool keep_reserve();
  bool release_reserve();
  static constexpr int64_t kReserveBytes = 128 << 10;

private:
  Database() = default;
  /// What a file says of itself before anything is written to it.
  struct Header {
    int app_id = 0, user_version = 0, objects = 0;
    /// Another application's file: how many of kiln.triton's cache tables
    /// (python/kiln/triton.py) it has, so that the refusal can say so.
    int triton_tables = 0;
  };
  // The steps of open(), in order.
  Status connect_checked(OpenMode mode, const std::string& dir, const TrustedOwners& owners,
                         CacheFiles* opened);
  Result<bool> create_file(const std::string& dir, const TrustedOwners& owners,
                           CacheFiles* files);
  Result<Header> read_header(const CacheFiles& opened, const TrustedOwners& owners);
  Status check_header(const Header& h) const;
  Status set_journal_mode(bool new_file);
  Status connect(const CacheFiles& files, bool wal_format, const TrustedOwners& owners);
  Status migrate();
  /// SQLite's commit hook: removes the published images unless the commit
  /// is bookkeeping; non-zero (the commit rolled back) if they stay.
  static int before_commit(void* self);
  /// The migrations this file lacks, in one write transaction.
  Status migrate_steps(int* from);
  /// Stamps the published images held across this connection's
  /// bookkeeping or its close (PublishedHold) with the files' state now.
  void renew_published();
  bool wrote() const; ///< this connection created, migrated or changed the file
  void close_wal();

  std::string path_;
  /// The cache's directory, held open while connected: SQLite opens the
  /// file and every side file through it (pinned_vfs in database.cpp).
  std::shared_ptr<const PinnedDir> pinned_;
  sqlite3* db_ = nullptr;
  std::pair<uint64_t, uint64_t> file_id_{}; ///< (device, inode) while registered as open
  bool registered_ = false;
  bool read_only_ = false;
  bool deferred_ = false; ///< defer_checkpoint was called
  static constexpr int64_t kLoaderWalBytes = 64 << 10;
  bool migrated_ = false;  ///< this connection created or migrated the schema
  int bookkeeping_ = 0;    ///< live Bookkeeping scopes
  bool published_stale_ = false;
  /// The published images, current when a bookkeeping commit or the close
  /// began, to be stamped anew after it.
  std::unique_ptr<PublishedHold> held_;
  bool wal_ = false;       ///< in WAL mode (not on a network file system)
  bool immutable_ = false; ///< read-only without locks: the file alone, watched
  int64_t reconnects_ = 0; ///< refresh() reconnections, for stamp()
  FileStamp watch_[3];     ///< immutable: the file, -wal and -shm when connected
  std::string read_only_reason_;
  std::function<void()> on_reconnect_;
  std::vector<std::pair<const char*, sqlite3_stmt*>> stmts_;
};

} // namespace kiln::storage
