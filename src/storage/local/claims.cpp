// Claims: which process is compiling a job now, so that the others wait for
// it (storage/single_flight.h). Bookkeeping: a claim changes no stored
// record, so the published images stay as they are.
//
// One row per claimed key, owned by one holder. The holder stores the job,
// then deletes its row. Others asking for the key wait for the job instead
// of compiling it. A holder proves it is alive by bumping `beat` (every
// quarter of its lease term); a waiter that sees the same beat for a whole
// term, measured on its own clock (no two clocks are compared), or that sees
// on its own machine that the holder's process is gone, takes the claim over
// by a compare-and-set on (holder, beat). No foreign key: a claim names a job
// nobody has stored yet.
//
// The table is made by the first claim, not by a migration: a cache that no
// two processes ever filled at once has none, and an empty cache stays the
// size it was. Its rows live only as long as a compile.
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include <chrono>

namespace kiln::storage {

namespace {

// A row of claims, its columns in table order.
ClaimState claim_row(const Bound& b) {
  ClaimState c;
  c.key = b.col_key(0);
  c.held = true;
  c.holder.id = b.col_text(1);
  c.holder.host = b.col_text(2);
  c.holder.host_name = b.col_text(3);
  c.holder.pid = b.col_i64(4);
  c.holder.pid_start = b.col_i64(5);
  c.beat = b.col_i64(6);
  c.claimed_at_ms = b.col_i64(7);
  return c;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

Result<bool> Store::has_claims() {
  KILN_TRY_ASSIGN(int64_t n, count("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                                   "name = 'claims'"));
  return n > 0;
}

Result<std::vector<ClaimState>> Store::claim(const ClaimHolder& me,
                                             const std::vector<Hash128>& keys,
                                             const std::vector<ClaimState>& lapsed) {
  std::lock_guard lock(mu_);
  Database::Bookkeeping claims(*db_);
  std::vector<ClaimState> out;
  Status s = transaction([&]() -> Status {
    out.clear();
    // The columns: the job's key (16 bytes); the holder's run (32 hex,
    // random); its boot id and pid namespace (the same machine); its host
    // name (for messages only); its pid and that process's start (clock
    // ticks after boot); the beat each renewal bumps; the claim's wall clock
    // in milliseconds (for messages only).
    KILN_TRY(exec("CREATE TABLE IF NOT EXISTS claims (claim_key BLOB PRIMARY KEY, holder TEXT NOT "
                  "NULL, host TEXT NOT NULL, host_name TEXT NOT NULL, pid INTEGER NOT NULL, "
                  "pid_start INTEGER NOT NULL, beat INTEGER NOT NULL, claimed_at INTEGER NOT "
                  "NULL) WITHOUT ROWID"));
    const int64_t at = now_ms();
    // A takeover first: it succeeds only while the holder and its beat are
    // still what the caller saw.
    KILN_TRY_ASSIGN(auto take, prepare("DELETE FROM claims WHERE claim_key = ?1 AND holder = ?2 "
                                       "AND beat = ?3"));
    for (const ClaimState& l : lapsed) {
      Bound b(take);
      b.key(1, l.key).text(2, l.holder.id).i64(3, l.beat);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot take over the claim on " + l.key.hex());
    }
    KILN_TRY_ASSIGN(auto add, prepare("INSERT OR IGNORE INTO claims(claim_key, holder, host, "
                                      "host_name, pid, pid_start, beat, claimed_at) VALUES (?1, "
                                      "?2, ?3, ?4, ?5, ?6, 0, ?7)"));
    KILN_TRY_ASSIGN(auto read,
                    prepare("SELECT claim_key, holder, host, host_name, pid, pid_start, beat, "
                            "claimed_at FROM claims WHERE claim_key = ?1"));
    for (const Hash128& k : keys) {
      {
        Bound b(add);
        b.key(1, k).text(2, me.id).text(3, me.host).text(4, me.host_name).i64(5, me.pid);
        b.i64(6, me.pid_start).i64(7, at);
        if (b.step() != SQLITE_DONE)
          return db_error("cannot claim job " + k.hex());
      }
      Bound r(read);
      r.key(1, k);
      int rc = r.step();
      if (rc == SQLITE_ROW) {
        out.push_back(claim_row(r));
      } else if (rc == SQLITE_DONE) {
        ClaimState free;
        free.key = k;
        out.push_back(free);
      } else {
        return db_error("cannot read the claim on " + k.hex());
      }
    }
    return Status::ok();
  });
  if (!s)
    return s.error();
  return out;
}

Result<std::vector<ClaimState>> Store::read_claims() {
  std::lock_guard lock(mu_);
  std::vector<ClaimState> out;
  KILN_TRY_ASSIGN(bool any, has_claims());
  if (!any)
    return out;
  KILN_TRY_ASSIGN(auto s, prepare("SELECT claim_key, holder, host, host_name, pid, pid_start, "
                                  "beat, claimed_at FROM claims"));
  Bound b(s);
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back(claim_row(b));
  if (rc != SQLITE_DONE)
    return db_error("cannot read the claims");
  return out;
}

Status Store::renew_claims(const std::string& holder) {
  std::lock_guard lock(mu_);
  Database::Bookkeeping claims(*db_);
  KILN_TRY_ASSIGN(bool any, has_claims());
  if (!any)
    return Status::ok();
  KILN_TRY_ASSIGN(auto s, prepare("UPDATE claims SET beat = beat + 1 WHERE holder = ?1"));
  Bound b(s);
  b.text(1, holder);
  if (b.step() != SQLITE_DONE)
    return db_error("cannot renew the claims of " + holder);
  return Status::ok();
}

Status Store::release_claims(const std::string& holder, const std::vector<Hash128>& keys) {
  std::lock_guard lock(mu_);
  Database::Bookkeeping claims(*db_);
  KILN_TRY_ASSIGN(bool any, has_claims());
  if (!any)
    return Status::ok();
  if (keys.empty()) {
    KILN_TRY_ASSIGN(auto s, prepare("DELETE FROM claims WHERE holder = ?1"));
    Bound b(s);
    b.text(1, holder);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot release the claims of " + holder);
    return Status::ok();
  }
  return transaction([&]() -> Status {
    KILN_TRY_ASSIGN(auto s, prepare("DELETE FROM claims WHERE claim_key = ?1 AND holder = ?2"));
    for (const Hash128& k : keys) {
      Bound b(s);
      b.key(1, k).text(2, holder);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot release the claim on " + k.hex());
    }
    return Status::ok();
  });
}

} // namespace kiln::storage
