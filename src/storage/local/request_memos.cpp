// Request memos: a whole precompile request → the closures its roots
// resolved to (schema/0003_memos.sql, 0006_structured_records.sql). Roots
// and dependencies are packed fields (statement.h), so a memo answers for
// every name LLVM accepts.
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include <ctime>

namespace kiln::storage {

Result<Store::Memo> Store::get_memo(const Hash128& key) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("SELECT roots, deps FROM memos WHERE key = ?1"));
  Bound b(s);
  b.text(1, key.hex());
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return Error(Code::not_found, "no memo " + key.hex());
  if (rc != SQLITE_ROW)
    return db_error("cannot read memo " + key.hex());
  auto roots = unpack_fields(b.col_blob(0));
  auto deps = unpack_fields(b.col_blob(1));
  // Three fields a root (name, target, closure), two a dependency (path, stamp).
  if (!roots || roots->size() % 3 != 0)
    return Error(Code::corrupt, "memo " + key.hex() + " has malformed roots");
  if (!deps || deps->size() % 2 != 0)
    return Error(Code::corrupt, "memo " + key.hex() + " has malformed dependencies");
  Memo memo;
  for (size_t i = 0; i < roots->size(); i += 3) {
    auto closure = parse_hash128((*roots)[i + 2]);
    if (!closure)
      return Error(Code::corrupt, "memo " + key.hex() + " names a malformed closure key for root " +
                                      std::to_string(i / 3));
    memo.roots.push_back({std::move((*roots)[i]), std::move((*roots)[i + 1]), *closure});
  }
  for (size_t i = 0; i < deps->size(); i += 2)
    memo.deps.push_back({std::move((*deps)[i]), std::move((*deps)[i + 1])});
  return memo;
}

Status Store::put_memo(const Hash128& key, const Memo& memo) {
  std::vector<std::string> roots, deps;
  for (const MemoRoot& r : memo.roots)
    roots.insert(roots.end(), {r.name, r.target, r.closure.hex()});
  for (const MemoDep& d : memo.deps)
    deps.insert(deps.end(), {d.path, d.stamp});
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("INSERT OR REPLACE INTO memos(key, roots, deps, created_at) "
                                  "VALUES (?1, ?2, ?3, ?4)"));
  Bound b(s);
  b.text(1, key.hex()).blob(2, pack_fields(roots)).blob(3, pack_fields(deps));
  b.i64(4, int64_t(std::time(nullptr)));
  if (b.step() != SQLITE_DONE)
    return db_error("cannot store memo " + key.hex());
  return Status::ok();
}

} // namespace kiln::storage
