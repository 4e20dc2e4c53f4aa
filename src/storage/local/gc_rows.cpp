// The cache file's eviction: gc per a policy (storage/gc.h; the policy read
// from command-line text is storage/gc.cpp's), and the job leases that keep
// a running precompile's jobs out of gc's reach until its closures are
// recorded.
#include "storage/gc.h"

#include "storage/local/statement.h"
#include "storage/local/store.h"

#include "core/keys.h"

#include <algorithm>
#include <set>

namespace kiln::storage {

Result<GcReport> Store::gc(const GcOptions& options) {
  auto report = gc_once(options);
  // A full disk has no room for the WAL's frames that deleting rows needs:
  // the reserve kept for this is given back to the file system, and gc runs
  // again; the space it frees comes back once the WAL is emptied into the
  // file, and the reserve is taken again.
  if (!report && !options.dry_run &&
      report.error().message.find("disk is full") != std::string::npos &&
      db_->release_reserve()) {
    report = gc_once(options);
    if (report) {
      std::unique_lock lock(mu_);
      (void)exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
  }
  if (report && !options.dry_run)
    (void)db_->keep_reserve();
  // An explicit gc (kiln-inspect gc, the one that vacuums; a precompile's
  // own size-limit gc does not) is maintenance: it trains the dictionaries
  // small requests left untrained (codec.h), off any request's clock. An
  // optimisation: a failure leaves plain blobs, still valid.
  if (report && !options.dry_run && options.vacuum) {
    {
      std::lock_guard lock(mu_);
      codec_.train_every_kind();
    }
    (void)compact();
  }
  return report;
}

namespace {

// A leased job is a running precompile's, whose closure is not recorded
// yet. Every set left is a closure's, so a job in none, and the root of no
// closure (a lone root has no set), is in no closure.
#define KILN_UNLEASED(job) "NOT EXISTS (SELECT 1 FROM job_leases l WHERE l.job_key = " job ")"
#define KILN_ORPHAN                                                                                \
  "key NOT IN (SELECT job_key FROM member_sets) AND key NOT IN (SELECT root_job FROM closures) " \
  "AND " KILN_UNLEASED("jobs.key")

/// Pages in use, in bytes; 0 if they cannot be counted.
int64_t pages_in_use(Database& db) {
  auto pages = db.count("PRAGMA page_count");
  auto free_pages = db.count("PRAGMA freelist_count");
  auto page_size = db.count("PRAGMA page_size");
  return pages && free_pages && page_size ? (*pages - *free_pages) * *page_size : 0;
}

/// The rows that keep nothing loadable: lapsed leases, names of key form
/// and member sets no closure names.
Status drop_dead_rows(Database& db, GcReport& rep) {
  // A lapsed lease is a precompile that crashed or ran past its term.
  {
    KILN_TRY_ASSIGN(auto lapsed, db.prepare("DELETE FROM job_leases WHERE expires_at <= ?1"));
    Bound b(lapsed);
    b.i64(1, now_seconds());
    if (b.step() != SQLITE_DONE)
      return db.db_error("cannot drop lapsed leases");
  }
  // Name and library rows of key form are never consulted and nothing
  // writes one now: one planted, or recorded before that rule, goes (it would
  // otherwise keep its closure named).
  for (const char* sql : {"DELETE FROM names WHERE " KILN_KEY_FORM("name"),
                          "DELETE FROM libraries WHERE " KILN_KEY_FORM("name")}) {
    KILN_TRY(db.exec(sql));
    rep.dropped_key_form_names += sqlite3_changes(db.handle());
  }
  // The rows of a member set no closure names (its closures went, or a
  // closure stored again moved to its members' own set) go: a set and its
  // closure are written in one transaction, so none is being made now.
  return db.exec("DELETE FROM member_sets WHERE NOT EXISTS "
                 "(SELECT 1 FROM closures c WHERE c.member_set = member_sets.set_key)");
}

/// Jobs that no closure uses (their root failed, or its closure went) go
/// first, under any limit: nothing can load them.
Status drop_orphan_jobs(Database& db, const GcOptions& options, GcReport& rep) {
  KILN_TRY_ASSIGN(auto orphans, db.count("SELECT count(*) FROM jobs WHERE " KILN_ORPHAN));
  if (orphans > 0 && (options.max_size >= 0 || options.older_than >= 0)) {
    KILN_TRY(db.exec("DELETE FROM jobs WHERE " KILN_ORPHAN));
    rep.evicted_jobs += orphans;
  }
  return Status::ok();
}

/// Every closure gc may evict, least recently used first; the ties of
/// one-second recency broken by key so the order is the same in every
/// process.
Result<std::vector<std::pair<Hash128, int64_t>>> closures_by_recency(Database& db) {
  // A closure rooted at a leased job is a running precompile's: it is
  // about to name it (after linking its image), or has just found it.
  KILN_TRY_ASSIGN(auto all, db.prepare("SELECT key, last_used FROM closures WHERE " KILN_UNLEASED(
                                "root_job") " ORDER BY last_used, key"));
  std::vector<std::pair<Hash128, int64_t>> order;
  Bound b(all);
  while (b.step() == SQLITE_ROW)
    order.emplace_back(b.col_key(0), b.col_i64(1));
  return order;
}

/// The statements that evict one closure, prepared once for all of them.
struct Eviction {
  sqlite3_stmt *members, *images, *set_of, *del_libraries, *del_closure, *del_set, *del_job;
};

Result<Eviction> prepare_eviction(Database& db) {
  auto members = db.prepare("SELECT symbol, job_key FROM closure_members WHERE closure_key = ?1");
  auto images = db.prepare("SELECT count(*) FROM images WHERE closure_key = ?1");
  auto set_of = db.prepare("SELECT member_set FROM closures WHERE key = ?1");
  auto del_libraries = db.prepare("DELETE FROM libraries WHERE closure_key = ?1");
  auto del_closure = db.prepare("DELETE FROM closures WHERE key = ?1");
  // A set's rows go with the last closure that names it (the roots of a
  // cycle share one set).
  auto del_set = db.prepare("DELETE FROM member_sets WHERE set_key = ?1 AND NOT EXISTS "
                            "(SELECT 1 FROM closures c WHERE c.member_set = ?1)");
  // A job still in a set, or the root of its own lone closure (?2, whose key
  // follows from the job and its symbol: no index of roots is kept), stays.
  auto del_job = db.prepare("DELETE FROM jobs WHERE key = ?1 AND NOT EXISTS (SELECT 1 FROM "
                            "member_sets m WHERE m.job_key = ?1) AND NOT EXISTS (SELECT 1 FROM "
                            "closures c WHERE c.key = ?2) AND " KILN_UNLEASED("?1"));
  for (auto* p : {&members, &images, &set_of, &del_libraries, &del_closure, &del_set, &del_job})
    if (!*p)
      return p->error();
  return Eviction{*members, *images, *set_of, *del_libraries, *del_closure, *del_set, *del_job};
}

/// One closure's rows: its libraries, the closure, its member set unless
/// another closure names it, and its jobs that nothing else holds.
Status evict_closure(Database& db, const Eviction& s, const Hash128& key, GcReport& rep) {
  std::vector<std::pair<std::string, Hash128>> jobs;
  {
    Bound b(s.members);
    b.key(1, key);
    while (b.step() == SQLITE_ROW)
      jobs.emplace_back(b.col_symbol(0), b.col_key(1));
  }
  {
    Bound b(s.images);
    b.key(1, key);
    if (b.step() == SQLITE_ROW)
      rep.evicted_images += b.col_i64(0);
  }
  std::optional<Hash128> set;
  {
    Bound b(s.set_of);
    b.key(1, key);
    if (b.step() == SQLITE_ROW)
      set = b.col_key_opt(0);
  }
  for (sqlite3_stmt* del : {s.del_libraries, s.del_closure}) {
    Bound b(del);
    b.key(1, key);
    if (b.step() != SQLITE_DONE)
      return db.db_error("cannot evict closure " + key.hex());
  }
  if (set) {
    Bound b(s.del_set);
    b.key(1, *set);
    if (b.step() != SQLITE_DONE)
      return db.db_error("cannot drop the member set of closure " + key.hex());
  }
  for (const auto& [symbol, j] : jobs) {
    Bound b(s.del_job);
    b.key(1, j).key(2, core::closure_key(j, {{symbol, j}}));
    int rc = b.step();
    // A job some closure still refers to in a way no key shows (a row
    // planted or damaged) fails its foreign key: it stays, and gc goes on.
    if (rc == SQLITE_DONE)
      rep.evicted_jobs += sqlite3_changes(db.handle());
    else if ((rc & 0xff) != SQLITE_CONSTRAINT)
      return db.db_error("cannot evict job " + j.hex());
  }
  return Status::ok();
}

/// Evicts closures, least recently used first, while they are older than
/// the policy allows or the cache is larger than it allows.
Status evict_closures(Database& db, const GcOptions& options, GcReport& rep) {
  int64_t cutoff = options.older_than >= 0 ? now_seconds() - options.older_than : INT64_MIN;
  KILN_TRY_ASSIGN(auto order, closures_by_recency(db));
  std::set<Hash128> keep(options.keep.begin(), options.keep.end());
  KILN_TRY_ASSIGN(Eviction statements, prepare_eviction(db));
  for (const auto& [key, last_used] : order) {
    if (keep.count(key))
      continue;
    bool too_old = last_used < cutoff;
    bool too_big = options.max_size >= 0 && pages_in_use(db) > options.max_size;
    if (!too_old && !too_big) {
      if (options.older_than < 0)
        break; // the rest are newer, and the size is met
      continue;
    }
    KILN_TRY(evict_closure(db, statements, key, rep));
    rep.evicted_closures.push_back(key);
  }
  return Status::ok();
}

/// The names of the closures evicted, in one pass (names have no index by
/// closure), then the units no name comes from any more.
Status drop_unnamed(Database& db, const GcReport& rep) {
  if (!rep.evicted_closures.empty())
    KILN_TRY(db.exec("DELETE FROM names WHERE closure_key NOT IN (SELECT key FROM closures)"));
  return db.exec("DELETE FROM units WHERE id NOT IN (SELECT unit_id FROM names WHERE "
                 "unit_id IS NOT NULL)");
}

#undef KILN_UNLEASED
#undef KILN_ORPHAN

} // namespace

Result<GcReport> Store::gc_once(const GcOptions& options) {
  // Loads served from the published images count as use: taken in first.
  (void)absorb_load_log();
  GcReport rep;
  KILN_TRY_ASSIGN(auto before, live_bytes());
  rep.bytes_before = rep.bytes_after = before;
  std::unique_lock lock(mu_);
  KILN_TRY(exec("BEGIN IMMEDIATE"));
  auto fail = [&](const Error& e) -> Result<GcReport> {
    (void)exec("ROLLBACK");
    return e.context("gc of cache '" + path() + "'");
  };
  if (Status s = drop_dead_rows(*db_, rep); !s)
    return fail(s.error());
  if (Status s = drop_orphan_jobs(*db_, options, rep); !s)
    return fail(s.error());
  if (Status s = evict_closures(*db_, options, rep); !s)
    return fail(s.error());
  if (Status s = drop_unnamed(*db_, rep); !s)
    return fail(s.error());
  rep.bytes_after = pages_in_use(*db_);
  if (options.dry_run) {
    (void)exec("ROLLBACK");
    return rep;
  }
  if (Status s = exec("COMMIT"); !s)
    return fail(s.error());
  if (!rep.evicted_closures.empty() || rep.evicted_jobs > 0)
    (void)exec(options.vacuum ? "VACUUM" : "PRAGMA incremental_vacuum");
  return rep;
}

Status Store::lease_jobs(const std::string& holder, const std::vector<Hash128>& keys,
                        int64_t expires_at) {
  std::lock_guard lock(mu_);
  Database::Bookkeeping leases(*db_);
  return transaction([&]() -> Status {
    KILN_TRY_ASSIGN(auto s, prepare("INSERT OR REPLACE INTO job_leases(job_key, holder, "
                                    "expires_at) VALUES (?1, ?2, ?3)"));
    for (const Hash128& k : keys) {
      Bound b(s);
      b.key(1, k).text(2, holder).i64(3, expires_at);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot lease job " + k.hex());
    }
    return Status::ok();
  });
}

Status Store::release_leases(const std::string& holder) {
  std::lock_guard lock(mu_);
  Database::Bookkeeping leases(*db_);
  KILN_TRY_ASSIGN(auto s, prepare("DELETE FROM job_leases WHERE holder = ?1"));
  Bound b(s);
  b.text(1, holder);
  if (b.step() != SQLITE_DONE)
    return db_error("cannot release the leases of " + holder);
  return Status::ok();
}

} // namespace kiln::storage
