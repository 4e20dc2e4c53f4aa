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
  auto live = [&]() -> int64_t {
    auto pages = count("PRAGMA page_count");
    auto free_pages = count("PRAGMA freelist_count");
    auto page_size = count("PRAGMA page_size");
    return pages && free_pages && page_size ? (*pages - *free_pages) * *page_size : 0;
  };
  // A lapsed lease is a precompile that crashed or ran past its term.
  {
    auto lapsed = prepare("DELETE FROM job_leases WHERE expires_at <= ?1");
    if (!lapsed)
      return fail(lapsed.error());
    Bound b(*lapsed);
    b.i64(1, now_seconds());
    if (b.step() != SQLITE_DONE)
      return fail(db_error("cannot drop lapsed leases"));
  }
  // Name and library rows of key form are never consulted and nothing
  // writes one now: one planted, or recorded before that rule, goes (it would
  // otherwise keep its closure named).
  for (const char* sql : {"DELETE FROM names WHERE " KILN_KEY_FORM("name"),
                          "DELETE FROM libraries WHERE " KILN_KEY_FORM("name")}) {
    if (Status s = exec(sql); !s)
      return fail(s.error());
    rep.dropped_key_form_names += sqlite3_changes(db_->handle());
  }
  // The rows of a member set no closure names (its closures went, or a
  // closure stored again moved to its members' own set) go: a set and its
  // closure are written in one transaction, so none is being made now.
  if (Status s = exec("DELETE FROM member_sets WHERE NOT EXISTS "
                      "(SELECT 1 FROM closures c WHERE c.member_set = member_sets.set_key)");
      !s)
    return fail(s.error());
  // Jobs that no closure uses (their root failed, or its closure went) go
  // first: nothing can load them. A leased job is a running precompile's,
  // whose closure is not recorded yet. Every set left is a closure's, so a
  // job in none, and the root of no closure (a lone root has no set), is in
  // no closure.
#define KILN_UNLEASED(job) "NOT EXISTS (SELECT 1 FROM job_leases l WHERE l.job_key = " job ")"
#define KILN_ORPHAN                                                                                \
  "key NOT IN (SELECT job_key FROM member_sets) AND key NOT IN (SELECT root_job FROM closures) " \
  "AND " KILN_UNLEASED("jobs.key")
  auto orphans = count("SELECT count(*) FROM jobs WHERE " KILN_ORPHAN);
  if (!orphans)
    return fail(orphans.error());
  if (*orphans > 0 && (options.max_size >= 0 || options.older_than >= 0)) {
    if (Status s = exec("DELETE FROM jobs WHERE " KILN_ORPHAN);
        !s)
      return fail(s.error());
    rep.evicted_jobs += *orphans;
  }

  int64_t cutoff = options.older_than >= 0 ? now_seconds() - options.older_than : INT64_MIN;
  // Least recently used first; the ties of one-second recency broken by key
  // so the order is the same in every process.
  std::vector<std::pair<Hash128, int64_t>> order;
  {
    // A closure rooted at a leased job is a running precompile's: it is
    // about to name it (after linking its image), or has just found it.
    auto all = prepare("SELECT key, last_used FROM closures WHERE " KILN_UNLEASED("root_job")
                       " ORDER BY last_used, key");
    if (!all)
      return fail(all.error());
    Bound b(*all);
    while (b.step() == SQLITE_ROW)
      order.emplace_back(b.col_key(0), b.col_i64(1));
  }
  std::set<Hash128> keep(options.keep.begin(), options.keep.end());
  auto members = prepare("SELECT symbol, job_key FROM closure_members WHERE closure_key = ?1");
  auto images = prepare("SELECT count(*) FROM images WHERE closure_key = ?1");
  auto set_of = prepare("SELECT member_set FROM closures WHERE key = ?1");
  auto del_libraries = prepare("DELETE FROM libraries WHERE closure_key = ?1");
  auto del_closure = prepare("DELETE FROM closures WHERE key = ?1");
  // A set's rows go with the last closure that names it (the roots of a
  // cycle share one set).
  auto del_set = prepare("DELETE FROM member_sets WHERE set_key = ?1 AND NOT EXISTS "
                         "(SELECT 1 FROM closures c WHERE c.member_set = ?1)");
  // A job still in a set, or the root of its own lone closure (?2, whose key
  // follows from the job and its symbol: no index of roots is kept), stays.
  auto del_job = prepare("DELETE FROM jobs WHERE key = ?1 AND NOT EXISTS (SELECT 1 FROM "
                         "member_sets m WHERE m.job_key = ?1) AND NOT EXISTS (SELECT 1 FROM "
                         "closures c WHERE c.key = ?2) AND " KILN_UNLEASED("?1"));
#undef KILN_UNLEASED
#undef KILN_ORPHAN
  for (auto* p : {&members, &images, &set_of, &del_libraries, &del_closure,
                  &del_set, &del_job})
    if (!*p)
      return fail(p->error());
  for (const auto& [key, last_used] : order) {
    if (keep.count(key))
      continue;
    bool too_old = last_used < cutoff;
    bool too_big = options.max_size >= 0 && live() > options.max_size;
    if (!too_old && !too_big) {
      if (options.older_than < 0)
        break; // the rest are newer, and the size is met
      continue;
    }
    std::vector<std::pair<std::string, Hash128>> jobs;
    {
      Bound b(*members);
      b.key(1, key);
      while (b.step() == SQLITE_ROW)
        jobs.emplace_back(b.col_symbol(0), b.col_key(1));
    }
    {
      Bound b(*images);
      b.key(1, key);
      if (b.step() == SQLITE_ROW)
        rep.evicted_images += b.col_i64(0);
    }
    std::optional<Hash128> set;
    {
      Bound b(*set_of);
      b.key(1, key);
      if (b.step() == SQLITE_ROW)
        set = b.col_key_opt(0);
    }
    for (auto* p : {&del_libraries, &del_closure}) {
      Bound b(**p);
      b.key(1, key);
      if (b.step() != SQLITE_DONE)
        return fail(db_error("cannot evict closure " + key.hex()));
    }
    if (set) {
      Bound b(*del_set);
      b.key(1, *set);
      if (b.step() != SQLITE_DONE)
        return fail(db_error("cannot drop the member set of closure " + key.hex()));
    }
    for (const auto& [symbol, j] : jobs) {
      Bound b(*del_job);
      b.key(1, j).key(2, core::closure_key(j, {{symbol, j}}));
      int rc = b.step();
      // A job some closure still refers to in a way no key shows (a row
      // planted or damaged) fails its foreign key: it stays, and gc goes on.
      if (rc == SQLITE_DONE)
        rep.evicted_jobs += sqlite3_changes(db_->handle());
      else if ((rc & 0xff) != SQLITE_CONSTRAINT)
        return fail(db_error("cannot evict job " + j.hex()));
    }
    rep.evicted_closures.push_back(key);
  }
  // The names of the closures evicted, in one pass (names have no index by
  // closure), then the units no name comes from any more.
  if (!rep.evicted_closures.empty())
    if (Status s = exec("DELETE FROM names WHERE closure_key NOT IN (SELECT key FROM closures)");
        !s)
      return fail(s.error());
  if (Status s = exec("DELETE FROM units WHERE id NOT IN (SELECT unit_id FROM names WHERE "
                      "unit_id IS NOT NULL)");
      !s)
    return fail(s.error());
  rep.bytes_after = live();
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
