// The closures record group: closures, the member sets they share (a lone
// root names none), the names that point at them and the unit each name
// came from, and the reads a load makes in one snapshot (read_root).
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include "core/check.h"
#include "core/keys.h"
#include "core/target.h"

#include <algorithm>
#include <map>

namespace kiln::storage {

Status Store::insert_closure_rows(const ClosureRecord& closure,
                                 const std::vector<NameRecord>& names, int64_t now) {
  // Every path that records a name (precompile, import, a remote fetch)
  // comes here or to point_name: none records one a lookup takes for a key.
  for (const NameRecord& nr : names)
    KILN_TRY(core::check_name(nr.name, "root"));
  // A job a concurrent gc evicted would fail the foreign key with a message
  // naming no job: say which one went.
  KILN_TRY_ASSIGN(auto has, prepare("SELECT symbol FROM jobs WHERE key = ?1"));
  std::string root_symbol;
  auto present = [&](const Hash128& job, const std::string& what) -> Status {
    Bound b(has);
    b.key(1, job);
    int rc = b.step();
    if (rc == SQLITE_ROW) {
      if (job == closure.root_job)
        root_symbol = b.col_symbol(0);
      return Status::ok();
    }
    if (rc != SQLITE_DONE)
      return db_error("cannot look up job " + job.hex());
    return make_error(Code::not_found, what + " job " + job.hex() +
                                           " is no longer in cache '" + path() +
                                           "' (evicted by a gc since it was stored or found)");
  };
  KILN_TRY(present(closure.root_job, "root"));
  // A closure whose one member is its root under the job's own symbol (no
  // deferred reference) names no set: closure_members gives that member
  // from the job's row (schema/0013_baseline.sql).
  // Its key must be the one core::closure_key gives that member: gc finds
  // a lone root's closure from its job by that key.
  bool lone = closure.members.size() == 1 && closure.members[0].job == closure.root_job &&
              closure.members[0].symbol == root_symbol &&
              closure.key == core::closure_key(closure.root_job, {{root_symbol, closure.root_job}});
  // Otherwise the members, as a set shared with every closure that has the
  // same ones: a set already stored has its jobs (its rows refer to them),
  // so only a new one is checked and written.
  Hash128 set;
  int found = SQLITE_ROW;
  if (!lone) {
    set = core::member_set_key(closure.members);
    KILN_TRY_ASSIGN(auto has_set,
                    prepare("SELECT 1 FROM member_sets WHERE set_key = ?1 LIMIT 1"));
    Bound b(has_set);
    b.key(1, set);
    found = b.step();
  }
  if (found != SQLITE_ROW && found != SQLITE_DONE)
    return db_error("cannot look up the closure's member set");
  if (found == SQLITE_DONE) {
    for (const ClosureMember& mem : closure.members)
      KILN_TRY(present(mem.job, "member '" + mem.symbol + "'"));
    KILN_TRY_ASSIGN(auto m, prepare("INSERT OR IGNORE INTO member_sets(set_key, symbol, "
                                    "job_key) VALUES (?1, ?2, ?3)"));
    for (const ClosureMember& mem : closure.members) {
      Bound b(m);
      b.key(1, set).symbol(2, mem.symbol).key(3, mem.job);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot insert closure member " + mem.symbol);
    }
  }
  // A closure precompiled again counts as used now, and names its members'
  // set (one made by migration 7 held its own copy; gc removes that).
  // NULL: the lone root.
  KILN_TRY_ASSIGN(auto c, prepare("INSERT INTO closures(key, root_job, target, member_set, "
                                  "created_at, last_used) VALUES (?1, ?2, ?3, ?4, ?5, ?5) "
                                  "ON CONFLICT(key) DO UPDATE SET last_used = "
                                  "max(last_used, excluded.last_used), member_set = "
                                  "excluded.member_set"));
  {
    Bound b(c);
    b.key(1, closure.key).key(2, closure.root_job).text(3, closure.target).i64(5, now);
    if (!lone)
      b.key(4, set);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot insert the closure");
  }
  // A name that keeps its closure keeps its unit; one that moves (an import,
  // a fetch) no longer knows where it came from.
  KILN_TRY_ASSIGN(
      auto n,
      prepare("INSERT INTO names(name, target, closure_key, updated_at) VALUES (?1, ?2, ?3, "
              "?4) ON CONFLICT(name, target) DO UPDATE SET closure_key = excluded.closure_key, "
              "updated_at = excluded.updated_at, unit_id = CASE WHEN closure_key = "
              "excluded.closure_key THEN unit_id END"));
  for (const NameRecord &nr : names) {
    Bound b(n);
    b.text(1, nr.name).text(2, nr.target).key(3, nr.closure).i64(4, now);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot record name " + nr.name);
  }
  return Status::ok();
}

Status Store::put_closure(const ClosureRecord& closure, const std::vector<NameRecord>& names) {
  std::lock_guard lock(mu_);
  Status s = transaction([&] { return insert_closure_rows(closure, names, now_seconds()); });
  if (!s)
    return s.error().context("storing closure " + closure.key.hex());
  return s;
}

Result<std::optional<NameMove>> Store::point_name(const NameRecord& name, const std::string& unit) {
  std::lock_guard lock(mu_);
  std::optional<NameMove> moved;
  Status s = transaction([&]() -> Status {
    KILN_TRY(core::check_name(name.name, "root"));
    KILN_TRY_ASSIGN(auto has, prepare("SELECT 1 FROM closures WHERE key = ?1"));
    {
      Bound b(has);
      b.key(1, name.closure);
      int rc = b.step();
      if (rc == SQLITE_DONE)
        return make_error(Code::not_found, "closure " + name.closure.hex() +
                                               " is no longer in cache '" + path() +
                                               "' (evicted by a gc since it was stored)");
      if (rc != SQLITE_ROW)
        return db_error("cannot look up closure " + name.closure.hex());
    }
    KILN_TRY_ASSIGN(auto old, prepare("SELECT n.closure_key, coalesce(u.path, '') FROM names n "
                                      "LEFT JOIN units u ON u.id = n.unit_id WHERE n.name = ?1 "
                                      "AND n.target = ?2"));
    {
      Bound b(old);
      b.text(1, name.name).text(2, name.target);
      int rc = b.step();
      if (rc == SQLITE_ROW && b.col_key(0) != name.closure)
        moved = NameMove{name.name,   name.target, b.col_key(0), b.col_text(1),
                         name.closure, unit};
      else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_error("cannot resolve name " + name.name);
    }
    KILN_TRY_ASSIGN(
        auto set,
        prepare("INSERT INTO names(name, target, closure_key, updated_at, unit_id) VALUES (?1, "
                "?2, ?3, ?4, ?5) ON CONFLICT(name, target) DO UPDATE SET closure_key = "
                "excluded.closure_key, updated_at = excluded.updated_at, unit_id = "
                "excluded.unit_id"));
    // The unit's row, made for its first name: every name of a unit shares it.
    int64_t unit_id = 0;
    if (!unit.empty()) {
      KILN_TRY_ASSIGN(auto find,
                      prepare("SELECT id FROM units WHERE path = ?1 ORDER BY id LIMIT 1"));
      KILN_TRY_ASSIGN(auto add, prepare("INSERT INTO units(path) VALUES (?1)"));
      Bound f(find);
      f.text(1, unit);
      int rc = f.step();
      if (rc == SQLITE_ROW) {
        unit_id = f.col_i64(0);
      } else if (rc == SQLITE_DONE) {
        Bound a(add);
        a.text(1, unit);
        if (a.step() != SQLITE_DONE)
          return db_error("cannot record unit " + unit);
        unit_id = int64_t(sqlite3_last_insert_rowid(db_->handle()));
      } else {
        return db_error("cannot look up unit " + unit);
      }
    }
    Bound b(set);
    b.text(1, name.name).text(2, name.target).key(3, name.closure);
    b.i64(4, now_seconds()).dict(5, unit_id);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot record name " + name.name);
    return Status::ok();
  });
  if (!s)
    return s.error().context("pointing name '" + name.name + "' at closure " +
                             name.closure.hex());
  return moved;
}

Result<std::optional<std::pair<Hash128, std::string>>>
Store::read_name(const std::string& name, const std::string& target) {
  using None = std::optional<std::pair<Hash128, std::string>>;
  if (is_hash128_hex(name))
    return None(); // a key-form string is never a name (resolve_name)
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("SELECT n.closure_key, coalesce(u.path, '') FROM names n LEFT "
                                  "JOIN units u ON u.id = n.unit_id WHERE n.name = ?1 AND "
                                  "n.target = ?2"));
  Bound b(s);
  b.text(1, name).text(2, target);
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return None();
  if (rc != SQLITE_ROW)
    return db_error("cannot resolve name " + name);
  auto key = b.col_key_opt(0);
  if (!key)
    return make_error(Code::corrupt, "name '" + name + "' (" + target +
                                         ") names a malformed closure key in cache '" + path() +
                                         "'");
  return None(std::pair{*key, b.col_text(1)});
}

Result<std::optional<Hash128>> Store::read_closure_head(const Hash128& key, ClosureRecord& out) {
  out.key = key;
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT root_job, target, member_set FROM closures WHERE key = ?1"));
  Bound b(s);
  b.key(1, key);
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no closure " + key.hex() + " in cache '" + path() + "'");
  if (rc != SQLITE_ROW)
    return db_error("cannot read closure " + key.hex());
  auto root = b.col_key_opt(0);
  auto set = b.col_key_opt(2);
  if (!root || (!set && !b.is_null(2)))
    return make_error(Code::corrupt, "closure " + key.hex() + " has a malformed key in its row");
  out.root_job = *root;
  out.target = b.col_text(1);
  return set;
}

Status Store::read_member_rows(const std::optional<Hash128>& set, const ClosureRecord& closure,
                               std::vector<ClosureMember>& out) {
  // Only the statement this closure needs is prepared: a fresh loading
  // connection pays for each one it prepares.
  KILN_TRY_ASSIGN(auto s, set ? prepare("SELECT m.symbol, m.job_key, j.entry FROM member_sets m "
                                        "JOIN jobs j ON j.key = m.job_key WHERE m.set_key = ?1")
                              : prepare("SELECT symbol, key, entry FROM jobs WHERE key = ?1"));
  Bound b(s);
  if (set)
    b.key(1, *set);
  else
    b.key(1, closure.root_job);
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_symbol(0), b.col_key(1), b.col_text(2)});
  if (rc != SQLITE_DONE)
    return db_error("cannot read the members of closure " + closure.key.hex());
  // By symbol as text: SQLite orders the deferred ones, stored as bytes,
  // after every other.
  std::sort(out.begin(), out.end(),
            [](const ClosureMember& a, const ClosureMember& b) { return a.symbol < b.symbol; });
  if (out.empty())
    return make_error(Code::corrupt,
                      "closure " + closure.key.hex() + " has no members whose jobs are present");
  return Status::ok();
}

Result<ClosureRecord> Store::read_closure_rows(const Hash128& key) {
  ClosureRecord out;
  KILN_TRY_ASSIGN(auto set, read_closure_head(key, out));
  KILN_TRY(read_member_rows(set, out, out.members));
  return out;
}

Result<ClosureBatch> Store::get_closures(const std::vector<Hash128>& keys) {
  std::lock_guard lock(mu_);
  Result<ClosureBatch> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    ClosureBatch batch;
    batch.closures.resize(keys.size());
    batch.first_of_set.resize(keys.size());
    // Each member set is read once, for the first closure naming it: the
    // roots of a deferred cycle share one set of N rows, not N of them. A
    // lone root (no set) is its own.
    std::map<Hash128, size_t> first;
    for (size_t i = 0; i < keys.size(); ++i) {
      ClosureRecord& c = batch.closures[i];
      auto set = read_closure_head(keys[i], c);
      if (!set) {
        out = set.error();
        return Status::ok();
      }
      std::optional<Hash128> stored = set.take();
      batch.first_of_set[i] = i;
      if (stored) {
        auto [at, fresh] = first.try_emplace(*stored, i);
        batch.first_of_set[i] = at->second;
        if (!fresh)
          continue;
      }
      if (Status read = read_member_rows(stored, c, c.members); !read) {
        out = read.error();
        return Status::ok();
      }
    }
    out = std::move(batch);
    return Status::ok();
  }));
  return out;
}

Result<ClosureRecord> Store::get_closure(const Hash128& key) {
  std::lock_guard lock(mu_);
  Result<ClosureRecord> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    out = read_closure_rows(key);
    return Status::ok();
  }));
  return out;
}

Result<RootRead> Store::read_root(const std::string& name, const std::string& target,
                                  const std::string& arch, bool with_root) {
  std::lock_guard lock(mu_);
  // A host load read the file: its close publishes the host images if none
  // are (Store::~Store).
  read_host_root_ = read_host_root_ || core::is_host_spec(target);
  Result<RootRead> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    // A key-form string is a closure key and is never looked up as a name
    // (no name of that form is recorded, and one an older cache holds is
    // not believed); any other string is a name only.
    std::optional<Hash128> key;
    if (is_hash128_hex(name)) {
      key = *parse_hash128(name);
    } else {
      KILN_TRY_ASSIGN(auto by_name,
                      prepare("SELECT closure_key FROM names WHERE name = ?1 AND target = ?2"));
      Bound b(by_name);
      b.text(1, name).text(2, target);
      int rc = b.step();
      if (rc == SQLITE_ROW)
        key = b.col_key(0);
      else if (rc != SQLITE_DONE)
        return db_error("cannot resolve name " + name);
    }
    if (!key) {
      out = make_error(Code::not_found, "no root named '" + name + "' for target " + target +
                                            " in cache '" + path() + "'");
      return Status::ok();
    }
    auto closure = read_closure_rows(*key);
    if (!closure) {
      out = closure.error();
      return Status::ok();
    }
    RootRead r{closure.take(), std::nullopt, std::nullopt, std::nullopt};
    // The root job too (the host backend checks its CPU features before any
    // image is loaded): in this transaction, not a second one.
    if (with_root)
      if (auto root = read_job_row(r.closure.root_job))
        r.root = root.take();
    if (!arch.empty()) {
      // A damaged image counts as absent here: the caller links anew.
      Hash128 source;
      if (auto bytes = read_best_image(*key, arch, &source)) {
        r.image = bytes.take();
        r.image_of = source;
      }
      else if (bytes.error().code != Code::not_found && bytes.error().code != Code::corrupt)
        return bytes.error();
    }
    out = std::move(r);
    return Status::ok();
  }));
  return out;
}

Result<Hash128> Store::resolve_name(const std::string& name, const std::string& target) {
  // A key-form string names a closure, never a root (core::check_name): a
  // name row of that form in an older cache is not believed.
  if (is_hash128_hex(name))
    return make_error(Code::not_found, "'" + name +
                                           "' has the form of a closure key, which names no "
                                           "root (roots are never named so)");
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("SELECT closure_key FROM names WHERE name = ?1 AND target = ?2"));
  Bound b(s);
  b.text(1, name).text(2, target);
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no root named '" + name + "' for target " + target +
                                           " in cache '" + path() + "'");
  if (rc != SQLITE_ROW)
    return db_error("cannot resolve name " + name);
  if (auto key = b.col_key_opt(0))
    return *key;
  return make_error(Code::corrupt, "name '" + name + "' (" + target +
                                       ") names a malformed closure key in cache '" + path() + "'");
}

Result<std::vector<Hash128>> Store::other_builds(const Hash128& root_job, size_t limit) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("SELECT c.key FROM jobs j JOIN targets tj ON tj.id = "
                                  "j.target_id JOIN jobs o ON o.module_hash = j.module_hash AND "
                                  "o.entry = j.entry AND o.options = j.options AND o.key != j.key "
                                  "JOIN targets t ON t.id = o.target_id AND t.spec = tj.spec "
                                  "JOIN closures c ON c.root_job = o.key WHERE j.key = ?1 "
                                  "ORDER BY c.created_at DESC, c.key LIMIT ?2"));
  Bound b(s);
  b.key(1, root_job).i64(2, int64_t(limit));
  std::vector<Hash128> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back(b.col_key(0));
  if (rc != SQLITE_DONE)
    return db_error("cannot list other builds of job " + root_job.hex());
  return out;
}

Result<std::vector<NameRecord>> Store::names_for(const std::string& name) {
  if (is_hash128_hex(name))
    return std::vector<NameRecord>{}; // a closure key, not a name: as resolve_name
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(
      auto s,
      prepare("SELECT name, target, closure_key FROM names WHERE name = ?1 ORDER BY target"));
  Bound b(s);
  b.text(1, name);
  std::vector<NameRecord> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_text(0), b.col_text(1), b.col_key(2)});
  if (rc != SQLITE_DONE)
    return db_error("cannot read names");
  return out;
}

Result<std::vector<NameRecord>> Store::list_names() {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT name, target, closure_key FROM names ORDER BY name, target"));
  Bound b(s);
  std::vector<NameRecord> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_text(0), b.col_text(1), b.col_key(2)});
  if (rc != SQLITE_DONE)
    return db_error("cannot list names");
  return out;
}

Status Store::check_closure_recorded(const ClosureRecord& closure,
                                     const std::vector<NameRecord>& names) {
  // A precompile whose every root is already recorded as it would record it
  // succeeds on a read-only cache; anything new is a write it cannot make.
  if (auto have = get_closure(closure.key); !have) {
    if (have.error().code != Code::not_found)
      return have.error();
    return read_only_error("record closure " + closure.key.hex());
  }
  for (const NameRecord& n : names) {
    auto have = resolve_name(n.name, n.target);
    if (!have || *have != n.closure)
      return read_only_error("record name '" + n.name + "' (" + n.target + ") for closure " +
                             n.closure.hex());
  }
  return Status::ok();
}

} // namespace kiln::storage
