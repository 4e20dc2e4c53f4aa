// Request memos: a whole precompile request → the closures its roots
// resolved to (schema/0003_memos.sql, 0008_binary_keys.sql). A memo is its
// rows: its roots and dependencies, in order, so that it answers for every
// name LLVM accepts. One without roots is never recorded (it would answer
// nothing).
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include <ctime>

namespace kiln::storage {

Result<Store::Memo> Store::get_memo(const Hash128& key) {
  std::lock_guard lock(mu_);
  KILN_TRY(refresh());
  // One statement, so one snapshot: a memo being recorded again is read
  // whole or not at all. Roots first, then dependencies, each in order.
  KILN_TRY_ASSIGN(auto s, prepare("SELECT 0, position, name, target, closure_key FROM memo_roots "
                                  "WHERE memo_key = ?1 UNION ALL SELECT 1, position, path, stamp, "
                                  "NULL FROM memo_deps WHERE memo_key = ?1 ORDER BY 1, 2"));
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
    // A memo recorded again replaces the old one, rows and all.
    KILN_TRY_ASSIGN(auto clear_roots, prepare("DELETE FROM memo_roots WHERE memo_key = ?1"));
    KILN_TRY_ASSIGN(auto clear_deps, prepare("DELETE FROM memo_deps WHERE memo_key = ?1"));
    KILN_TRY_ASSIGN(auto root, prepare("INSERT INTO memo_roots(memo_key, position, name, target, "
                                       "closure_key) VALUES (?1, ?2, ?3, ?4, ?5)"));
    KILN_TRY_ASSIGN(auto dep, prepare("INSERT INTO memo_deps(memo_key, position, path, stamp) "
                                      "VALUES (?1, ?2, ?3, ?4)"));
    for (sqlite3_stmt* clear : {clear_roots, clear_deps}) {
      Bound b(clear);
      b.key(1, key);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot replace memo " + key.hex());
    }
    for (size_t i = 0; i < memo.roots.size(); ++i) {
      const MemoRoot& r = memo.roots[i];
      Bound b(root);
      b.key(1, key).i64(2, int64_t(i)).text(3, r.name).text(4, r.target).key(5, r.closure);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot store the roots of memo " + key.hex());
    }
    for (size_t i = 0; i < memo.deps.size(); ++i) {
      Bound b(dep);
      b.key(1, key).i64(2, int64_t(i)).text(3, memo.deps[i].path).text(4, memo.deps[i].stamp);
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
