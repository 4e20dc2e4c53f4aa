// The cache file's half of verification: its rows (dictionaries and blobs
// against their checksums, closures' members, names' closures, jobs'
// targets) checked in SQL. verify_cache (storage/verify.cpp) checks the
// keys and images above them.
#include "storage/verify.h"

#include "storage/local/statement.h"
#include "storage/local/store.h"

#include <string_view>

namespace kiln::storage {

namespace {

/// Each dictionary against its checksum.
Status check_dictionaries(Database& db, std::vector<Problem>& out) {
  KILN_TRY_ASSIGN(auto s,
                  db.prepare("SELECT id, kind, checksum, data FROM dictionaries ORDER BY id"));
  Bound b(s);
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    if (checksum_of(b.col_blob(3)) != b.col_i64(2)) {
      std::string id = std::to_string(b.col_i64(0));
      out.push_back({"dictionary", id,
                     "dictionary " + id + " (" + b.col_text(1) + ") fails its checksum"});
    }
  if (rc != SQLITE_DONE)
    return db.db_error("cannot read dictionaries");
  return Status::ok();
}

/// Each blob `sql` lists (key, what, raw size, checksum, data, dictionary),
/// unpacked and checked against its size and checksum.
Status check_blobs(Database& db, BlobCodec& codec, const char* sql, const char* kind,
                   bool closure_key, std::vector<Problem>& out) {
  KILN_TRY_ASSIGN(auto s, db.prepare(sql));
  Bound b(s);
  int rc;
  while ((rc = b.step()) == SQLITE_ROW) {
    std::string key = b.col_text(0), what = b.col_text(1);
    std::string label = std::string(kind) + " " + what + " of " +
                        (closure_key ? "closure " : "job ") + key;
    auto raw = codec.unpack(b.col_blob(4), b.col_i64(2), b.col_i64(3), b.col_dict(5), label);
    if (!raw)
      out.push_back({kind, key, raw.error().message});
  }
  return rc == SQLITE_DONE ? Status::ok() : Status(db.db_error("cannot read blobs"));
}

struct Check {
  const char* sql;
  const char* kind;
  const char* what;
};
// Each query lists (key, detail) pairs that are problems.
// Keys are 16-byte BLOBs (schema/0013_baseline.sql): a row holding
// anything else is never found by its key.
#define KILN_BAD_KEY(column) "(typeof(" column ") != 'blob' OR length(" column ") != 16)"
const Check kChecks[] = {
    {"SELECT " KILN_HEX("key") ", 'key' FROM jobs WHERE " KILN_BAD_KEY("key") " OR "
     KILN_BAD_KEY("module_hash"),
     "job", "malformed "},
    {"SELECT " KILN_HEX("key") ", 'key' FROM closures WHERE " KILN_BAD_KEY("key") " OR "
     KILN_BAD_KEY("root_job") " OR (member_set IS NOT NULL AND " KILN_BAD_KEY("member_set") ")",
     "closure", "malformed "},
    {"SELECT " KILN_HEX("c.key") ", " KILN_HEX("c.root_job") " FROM closures c WHERE NOT EXISTS "
     "(SELECT 1 FROM jobs j WHERE j.key = c.root_job)",
     "closure", "root job missing: "},
    {"SELECT " KILN_HEX("c.key") ", " KILN_HEX("c.root_job") " FROM closures c WHERE "
     "c.member_set IS NOT NULL AND NOT EXISTS (SELECT 1 FROM member_sets m WHERE m.set_key = "
     "c.member_set AND m.job_key = c.root_job)",
     "closure", "root job is not a member: "},
    {"SELECT " KILN_HEX("m.closure_key") ", " KILN_HEX("m.job_key") " FROM closure_members m "
     "WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.key = m.job_key)",
     "closure", "member job missing: "},
    {"SELECT " KILN_HEX("m.closure_key") ", " KILN_SYMBOL_TEXT("m.symbol") " FROM "
     "closure_members m JOIN jobs j ON "
     "j.key = m.job_key WHERE j.symbol != m.symbol",
     "closure", "member does not define its symbol: "},
    // Every deferred symbol a member leaves open must be satisfied within
    // the closure.
    {"SELECT " KILN_HEX("m.closure_key") ", " KILN_SYMBOL_TEXT("r.symbol") " FROM "
     "closure_members m JOIN job_refs r ON "
     "r.job_key = m.job_key WHERE NOT EXISTS (SELECT 1 FROM closure_members m2 WHERE "
     "m2.closure_key = m.closure_key AND m2.symbol = r.symbol)",
     "closure", "open deferred symbol unresolved: "},
    {"SELECT " KILN_HEX("j.key") ", a.format FROM jobs j LEFT JOIN artifacts a ON a.job_key = "
     "j.key WHERE a.job_key IS NULL",
     "job", "has no artifacts"},
    {"SELECT " KILN_HEX("j.key") ", j.target_id FROM jobs j WHERE NOT EXISTS "
     "(SELECT 1 FROM targets t WHERE t.id = j.target_id)",
     "job", "target description missing: "},
    {"SELECT " KILN_HEX("i.closure_key") ", i.link FROM images i WHERE NOT EXISTS "
     "(SELECT 1 FROM image_links l WHERE l.id = i.link)",
     "image", "arch and linker missing (image_links): "},
    {"SELECT n.name || ' (' || n.target || ')', " KILN_HEX("n.closure_key") " FROM names n "
     "WHERE NOT EXISTS (SELECT 1 FROM closures c WHERE c.key = n.closure_key)",
     "name", "names a missing closure: "},
    {"SELECT l.name || ' (' || l.target || ')', " KILN_HEX("l.closure_key") " FROM libraries l "
     "WHERE NOT EXISTS (SELECT 1 FROM closures c WHERE c.key = l.closure_key)",
     "library", "names a missing closure: "},
    // A name of key form (32 hex digits) is never consulted, since a
    // lookup of that form is a closure key, and nothing writes one now:
    // such a row was planted or predates that rule.
    {"SELECT n.name || ' (' || n.target || ')', " KILN_HEX("n.closure_key") " FROM names n "
     "WHERE " KILN_KEY_FORM("n.name"),
     "name", "has the form of a closure key, so it is never consulted (gc drops it); it "
            "points at "},
    {"SELECT l.name || ' (' || l.target || ')', " KILN_HEX("l.closure_key") " FROM libraries l "
     "WHERE " KILN_KEY_FORM("l.name"),
     "library", "has the form of a closure key, so it is never consulted (gc drops it); it "
               "points at "},
};

/// Every check of kChecks, each row it lists a problem.
Status check_relations(Database& db, std::vector<Problem>& out) {
  for (const Check& c : kChecks) {
    KILN_TRY_ASSIGN(auto s, db.prepare(c.sql));
    Bound b(s);
    int rc;
    while ((rc = b.step()) == SQLITE_ROW)
      out.push_back({c.kind, b.col_text(0), std::string(c.kind) + " " + b.col_text(0) + ": " +
                                                c.what + b.col_text(1)});
    if (rc != SQLITE_DONE)
      return db.db_error("cannot verify");
  }
  return Status::ok();
}

} // namespace

Status Store::check_rows(std::vector<Problem>& out) {
  std::lock_guard lock(mu_);
  KILN_TRY(refresh()); // an immutable reader verifies the file as it is now
  // Dictionaries first: a damaged one is one problem, and every blob that
  // needs it another.
  KILN_TRY(check_dictionaries(*db_, out));
  KILN_TRY(check_blobs(*db_, codec_,
                       "SELECT " KILN_HEX("job_key") ", format, raw_size, checksum, data, dict_id "
                       "FROM artifacts ORDER BY job_key, format",
                       "artifact", false, out));
  KILN_TRY(check_blobs(*db_, codec_,
                       "SELECT " KILN_HEX("i.closure_key") ", coalesce(l.arch || ' (' || "
                       "l.linker || ')', 'link ' || i.link), i.raw_size, i.checksum, i.data, "
                       "i.dict_id FROM images i LEFT JOIN image_links l ON l.id = i.link ORDER "
                       "BY i.closure_key, l.arch",
                       "image", true, out));
  return check_relations(*db_, out);
}

Result<std::vector<Problem>> Store::verify() {
  KILN_TRY_ASSIGN(auto rep, verify_cache(*this));
  return std::move(rep.problems);
}

} // namespace kiln::storage
