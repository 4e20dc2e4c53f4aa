// Request memos: a whole precompile request → the closures its roots
// resolved to (schema/0013_baseline.sql). A memo is its key's id in `memos` and its rows in
// `memo_rows`: its roots (kind 0) and dependencies (kind 1), in order, so
// that it answers for every name LLVM accepts. One without roots is never
// recorded (it would answer nothing).
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include <ctime>

namespace kiln::storage {

Result<Memo> Store::get_memo(const Hash128& key) {
  std::lock_guard lock(mu_);
  KILN_TRY(refresh());
  // One statement, so one snapshot: a memo being recorded again is read
  // whole or not at all. Roots first, then dependencies, each in order.
  KILN_TRY_ASSIGN(auto s, prepare("SELECT kind, position, name, value, closure_key FROM memo_rows "
                                  "WHERE memo = (SELECT id FROM memos WHERE key = ?1) "
                                  "ORDER BY kind, position"));
  Bound b(s);
  b.key(1, key);
  Memo memo;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW) {
    if (b.col_i64(0) == 1) {
      memo.deps.push_back({b.col_text(2), b.col_text(3)});
      continue;
    }
    auto closure = b.col_key_opt(4);
    if (!closure)
      return Error(Code::corrupt, "memo " + key.hex() + " names a malformed closure key for root " +
                                      std::to_string(memo.roots.size()));
    memo.roots.push_back({b.col_text(2), b.col_text(3), *closure});
  }
  if (rc != SQLITE_DONE)
    return db_error("cannot read memo " + key.hex());
  if (memo.roots.empty())
    return Error(Code::not_found, "no memo " + key.hex());
  return memo;
}

Status Store::put_memo(const Hash128& key, const Memo& memo) {
  if (memo.roots.empty())
    return Status::ok();
  std::lock_guard lock(mu_);
  Database::Bookkeeping memos(*db_); // a memo names closures; loads read none
  Status s = transaction([&]() -> Status {
    // A memo recorded again keeps its id and replaces its rows; a new one
    // takes one more than the largest id.
    KILN_TRY_ASSIGN(auto add, prepare("INSERT INTO memos(key, id) SELECT ?1, (SELECT "
                                      "coalesce(max(id), 0) + 1 FROM memos) WHERE NOT EXISTS "
                                      "(SELECT 1 FROM memos WHERE key = ?1)"));
    KILN_TRY_ASSIGN(auto find, prepare("SELECT id FROM memos WHERE key = ?1"));
    KILN_TRY_ASSIGN(auto clear, prepare("DELETE FROM memo_rows WHERE memo = ?1"));
    KILN_TRY_ASSIGN(auto row, prepare("INSERT INTO memo_rows(memo, kind, position, name, value, "
                                      "closure_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    {
      Bound b(add);
      b.key(1, key);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot add memo " + key.hex());
    }
    int64_t id = 0;
    {
      Bound b(find);
      b.key(1, key);
      if (b.step() != SQLITE_ROW)
        return db_error("cannot find memo " + key.hex());
      id = b.col_i64(0);
    }
    {
      Bound b(clear);
      b.i64(1, id);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot replace memo " + key.hex());
    }
    for (size_t i = 0; i < memo.roots.size(); ++i) {
      const MemoRoot& r = memo.roots[i];
      Bound b(row);
      b.i64(1, id).i64(2, 0).i64(3, int64_t(i)).text(4, r.name).text(5, r.target).key(6, r.closure);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot store the roots of memo " + key.hex());
    }
    for (size_t i = 0; i < memo.deps.size(); ++i) {
      Bound b(row);
      b.i64(1, id).i64(2, 1).i64(3, int64_t(i)).text(4, memo.deps[i].path);
      b.text(5, memo.deps[i].stamp); // no closure: NULL
      if (b.step() != SQLITE_DONE)
        return db_error("cannot store the dependencies of memo " + key.hex());
    }
    return Status::ok();
  });
  if (!s)
    return s.error().context("recording memo " + key.hex());
  return s;
}

} // namespace kiln::storage
