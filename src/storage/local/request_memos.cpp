// Request memos: a whole precompile request → the closures its roots
// resolved to (schema/0003_memos.sql).
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include <ctime>
#include <sstream>

namespace kiln::storage {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

bool has_separator(const std::string& s) { return s.find_first_of("\t\n") != std::string::npos; }

} // namespace

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
  Memo memo;
  for (const std::string& line : lines_of(b.col_text(0))) {
    size_t t1 = line.find('\t');
    size_t t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    auto closure = parse_hash128(t2 == std::string::npos ? std::string() : line.substr(t2 + 1));
    if (!closure)
      return Error(Code::corrupt, "memo " + key.hex() + " has a malformed line '" + line + "'");
    memo.roots.push_back({line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), *closure});
  }
  memo.deps = lines_of(b.col_text(1));
  return memo;
}

Status Store::put_memo(const Hash128& key, const Memo& memo) {
  std::string roots, deps;
  for (const MemoRoot& r : memo.roots) {
    if (has_separator(r.name) || has_separator(r.target))
      return Status::ok(); // such names are never memoised; the request just replans
    roots += r.name + '\t' + r.target + '\t' + r.closure.hex() + '\n';
  }
  for (const std::string& d : memo.deps) {
    if (d.find('\n') != std::string::npos)
      return Status::ok();
    deps += d + '\n';
  }
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("INSERT OR REPLACE INTO memos(key, roots, deps, created_at) "
                                  "VALUES (?1, ?2, ?3, ?4)"));
  Bound b(s);
  b.text(1, key.hex()).text(2, roots).text(3, deps).i64(4, int64_t(std::time(nullptr)));
  if (b.step() != SQLITE_DONE)
    return db_error("cannot store memo " + key.hex());
  return Status::ok();
}

} // namespace kiln::storage
