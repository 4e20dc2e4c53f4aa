// Request memos: a whole precompile request → the closures its roots
// resolved to (schema/0003_memos.sql).
#include "cache/statement.h"
#include "cache/store.h"

#include <ctime>
#include <sstream>

namespace kiln::cache {

Result<std::vector<Store::MemoRoot>> Store::get_memo(const Hash128& key) {
  std::lock_guard lock(mu_);
  auto s = prepare("SELECT roots FROM memos WHERE key = ?1");
  if (!s)
    return s.error();
  Bound b(*s);
  b.text(1, key.hex());
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return Error(Code::not_found, "no memo " + key.hex());
  if (rc != SQLITE_ROW)
    return db_error("cannot read memo " + key.hex());
  std::vector<MemoRoot> roots;
  std::istringstream in(b.col_text(0));
  for (std::string line; std::getline(in, line);) {
    size_t t1 = line.find('\t');
    size_t t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    auto closure = parse_hash128(t2 == std::string::npos ? std::string() : line.substr(t2 + 1));
    if (!closure)
      return Error(Code::corrupt, "memo " + key.hex() + " has a malformed line '" + line + "'");
    roots.push_back({line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), *closure});
  }
  return roots;
}

Status Store::put_memo(const Hash128& key, const std::vector<MemoRoot>& roots) {
  std::string text;
  for (const MemoRoot& r : roots) {
    if (r.name.find_first_of("\t\n") != std::string::npos ||
        r.target.find_first_of("\t\n") != std::string::npos)
      return Status::ok(); // such names are never memoised; the request just replans
    text += r.name + '\t' + r.target + '\t' + r.closure.hex() + '\n';
  }
  std::lock_guard lock(mu_);
  auto s = prepare("INSERT OR REPLACE INTO memos(key, roots, created_at) VALUES (?1, ?2, ?3)");
  if (!s)
    return s.error();
  Bound b(*s);
  b.text(1, key.hex()).text(2, text).i64(3, int64_t(std::time(nullptr)));
  if (b.step() != SQLITE_DONE)
    return db_error("cannot store memo " + key.hex());
  return Status::ok();
}

} // namespace kiln::cache
