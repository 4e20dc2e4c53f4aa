// The libraries record group: a kernel library's row (its closure) and its
// root names, in order (library_roots).
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include "core/check.h"

namespace kiln::storage {

// A kernel library is a closure (the union of the roots' closures), so its
// image, gc, usage and verification are a closure's; the row names it, and
// library_roots lists the root names it was made from, in order. gc deletes
// the rows with its closure.
Status Store::put_library(const ClosureRecord& closure, const LibraryRecord& library) {
  KILN_TRY(core::check_name(library.name, "library"));
  std::lock_guard lock(mu_);
  if (read_only()) {
    // As put_closure: succeeds only if it is recorded already.
    auto have = read_library(library.name, library.target);
    if (have && have->closure == closure.key && have->roots == library.roots)
      return Status::ok();
    return read_only_error("recording library '" + library.name + "'");
  }
  Status s = transaction([&]() -> Status {
    int64_t now = now_seconds();
    KILN_TRY(insert_closure_rows(closure, {}, now));
    KILN_TRY_ASSIGN(auto set,
                    prepare("INSERT INTO libraries(name, target, closure_key, updated_at) "
                            "VALUES (?1, ?2, ?3, ?4) ON CONFLICT(name, target) DO UPDATE SET "
                            "closure_key = excluded.closure_key, updated_at = "
                            "excluded.updated_at"));
    KILN_TRY_ASSIGN(auto clear,
                    prepare("DELETE FROM library_roots WHERE name = ?1 AND target = ?2"));
    KILN_TRY_ASSIGN(auto add, prepare("INSERT INTO library_roots(name, target, position, root) "
                                      "VALUES (?1, ?2, ?3, ?4)"));
    {
      Bound b(set);
      b.text(1, library.name).text(2, library.target).key(3, closure.key).i64(4, now);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot record library " + library.name);
    }
    {
      Bound b(clear);
      b.text(1, library.name).text(2, library.target);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot record library " + library.name);
    }
    for (size_t i = 0; i < library.roots.size(); ++i) {
      Bound b(add);
      b.text(1, library.name).text(2, library.target).i64(3, int64_t(i)).text(4, library.roots[i]);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot record the roots of library " + library.name);
    }
    return Status::ok();
  });
  if (!s)
    return s.error().context("recording library '" + library.name + "' (" + library.target +
                             ")");
  return s;
}

Result<LibraryRecord> Store::read_library(const std::string& name, const std::string& target) {
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT closure_key FROM libraries WHERE name = ?1 AND target = ?2"));
  KILN_TRY_ASSIGN(auto r, prepare("SELECT root FROM library_roots WHERE name = ?1 AND "
                                  "target = ?2 ORDER BY position"));
  LibraryRecord lib{name, target, {}, {}};
  {
    Bound b(s);
    b.text(1, name).text(2, target);
    int rc = b.step();
    if (rc == SQLITE_DONE)
      return make_error(Code::not_found, "no library named '" + name + "' for target " + target +
                                             " in cache '" + path() + "'");
    if (rc != SQLITE_ROW)
      return db_error("cannot read library " + name);
    auto key = b.col_key_opt(0);
    if (!key)
      return make_error(Code::corrupt, "library '" + name + "' (" + target +
                                           ") names a malformed closure key");
    lib.closure = *key;
  }
  Bound b(r);
  b.text(1, name).text(2, target);
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    lib.roots.push_back(b.col_text(0));
  if (rc != SQLITE_DONE)
    return db_error("cannot read the roots of library " + name);
  return lib;
}

Result<LibraryRecord> Store::get_library(const std::string& name, const std::string& target) {
  std::lock_guard lock(mu_);
  // A key-form name is never a library's (put_library refuses one), as for roots.
  if (is_hash128_hex(name))
    return make_error(Code::not_found, "no library named '" + name + "' for target " + target +
                                           " in cache '" + path() + "'");
  Result<LibraryRecord> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    out = read_library(name, target);
    return Status::ok();
  }));
  return out;
}

Result<std::vector<LibraryRecord>> Store::list_libraries(const std::string& name) {
  std::lock_guard lock(mu_);
  if (is_hash128_hex(name)) // a key-form name is no library's, as in get_library
    return std::vector<LibraryRecord>{};
  Result<std::vector<LibraryRecord>> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    KILN_TRY_ASSIGN(auto s, prepare("SELECT name, target FROM libraries WHERE ?1 = '' OR "
                                    "name = ?1 ORDER BY name, target"));
    std::vector<std::pair<std::string, std::string>> rows;
    {
      Bound b(s);
      b.text(1, name);
      int rc;
      while ((rc = b.step()) == SQLITE_ROW)
        rows.emplace_back(b.col_text(0), b.col_text(1));
      if (rc != SQLITE_DONE)
        return db_error("cannot list libraries");
    }
    std::vector<LibraryRecord> libs;
    for (const auto& [n, t] : rows) {
      auto lib = read_library(n, t);
      if (!lib) {
        out = lib.error();
        return Status::ok();
      }
      libs.push_back(lib.take());
    }
    out = std::move(libs);
    return Status::ok();
  }));
  return out;
}

} // namespace kiln::storage
