// The jobs record group: a job's row (its target description and toolchain
// stored once, in targets), its artifacts (through the blob codec) and the
// deferred references it leaves open.
#include "storage/local/codec.h"
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include <algorithm>

namespace kiln::storage {

Result<bool> Store::has_job(const Hash128& key, const std::vector<std::string>& formats) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT count(*) FROM artifacts WHERE job_key = ?1 AND format = ?2"));
  std::string hex = key.hex();
  for (const std::string &f : formats) {
    Bound b(s);
    b.key(1, key).text(2, f);
    if (b.step() != SQLITE_ROW)
      return db_error("cannot look up job " + hex);
    if (b.col_i64(0) == 0)
      return false;
  }
  if (formats.empty()) {
    KILN_TRY_ASSIGN(auto j, prepare("SELECT 1 FROM jobs WHERE key = ?1"));
    Bound b(j);
    b.key(1, key);
    return b.step() == SQLITE_ROW;
  }
  return true;
}

Result<int64_t> Store::target_id(const JobRecord& job) {
  // A few rows (one per target and CPU): no index needed. Writers are
  // serialised, so two cannot insert the same description.
  KILN_TRY_ASSIGN(auto find, prepare("SELECT id FROM targets WHERE spec = ?1 AND triple = ?2 AND "
                                     "cpu = ?3 AND features = ?4 AND toolchain = ?5 ORDER BY id "
                                     "LIMIT 1"));
  {
    Bound b(find);
    b.text(1, job.target).text(2, job.triple).text(3, job.cpu).text(4, job.features);
    b.text(5, job.toolchain);
    int rc = b.step();
    if (rc == SQLITE_ROW)
      return b.col_i64(0);
    if (rc != SQLITE_DONE)
      return db_error("cannot look up target " + job.target);
  }
  KILN_TRY_ASSIGN(auto ins, prepare("INSERT INTO targets(spec, triple, cpu, features, toolchain) "
                                    "VALUES (?1, ?2, ?3, ?4, ?5)"));
  Bound b(ins);
  b.text(1, job.target).text(2, job.triple).text(3, job.cpu).text(4, job.features);
  b.text(5, job.toolchain);
  if (b.step() != SQLITE_DONE)
    return db_error("cannot record target " + job.target);
  return int64_t(sqlite3_last_insert_rowid(db_->handle()));
}

Status Store::insert_job_rows(const JobRecord& job, const std::vector<Artifact>& artifacts,
                              const std::vector<Packed>& packed,
                              const std::vector<JobRef>& refs) {
  const Hash128& key = job.key;
  KILN_TRY_ASSIGN(auto target, target_id(job));
  KILN_TRY_ASSIGN(auto ins,
                  prepare("INSERT OR IGNORE INTO jobs(key, entry, symbol, target_id, options, "
                          "module_hash, compile_us, created_at) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  {
    Bound b(ins);
    b.key(1, key).text(2, job.entry).symbol(3, job.symbol).i64(4, target);
    b.text(5, job.options).key(6, job.module_hash);
    // Whole microseconds (schema/0013_baseline.sql): SQLite stores a REAL
    // with no fraction in as few bytes as an integer. Rounded by hand:
    // std::round would make libkiln load libm, a library more for every
    // process that only loads images.
    const double raw_us = job.compile_ms * 1000;
    const double us = raw_us > 0 && raw_us < 1e15 ? double(int64_t(raw_us + 0.5)) : 0;
    b.real(7, us).i64(8, job.created_at ? job.created_at : now_seconds());
    if (b.step() != SQLITE_DONE)
      return db_error("cannot insert the job");
  }
  KILN_TRY_ASSIGN(
      auto art,
      prepare("INSERT OR IGNORE INTO artifacts(job_key, format, raw_size, checksum, data, "
              "dict_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  for (size_t i = 0; i < artifacts.size(); ++i) {
    Bound b(art);
    b.key(1, key).text(2, artifacts[i].format).i64(3, int64_t(artifacts[i].bytes.size()));
    b.i64(4, checksum_of(artifacts[i].bytes)).blob(5, packed[i].data).dict(6, packed[i].dict);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot insert artifact " + artifacts[i].format);
  }
  KILN_TRY_ASSIGN(
      auto ref,
      prepare("INSERT OR IGNORE INTO job_refs(job_key, symbol, entry) VALUES (?1, ?2, ?3)"));
  for (const JobRef &r : refs) {
    Bound b(ref);
    b.key(1, key).symbol(2, r.symbol).text(3, r.entry);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot insert deferred reference " + r.symbol);
  }
  return Status::ok();
}

Status Store::put_job(const JobRecord& job, const std::vector<Artifact>& artifacts,
                      const std::vector<JobRef>& refs) {
  for (const Artifact& a : artifacts)
    KILN_TRY(check_storable("the " + a.format + " of job " + job.key.hex() + " (" + job.entry +
                                ", " + job.target + ")",
                            a.bytes.size()));
  std::vector<std::shared_ptr<const Dictionary>> dicts;
  {
    std::lock_guard lock(mu_);
    for (const Artifact& a : artifacts) {
      dicts.push_back(writing_dictionary(kind_name(false, a.format)));
      codec_.count_stored(kind_name(false, a.format));
    }
  }
  // Compress outside the lock: it is the expensive part.
  std::vector<Packed> packed;
  packed.reserve(artifacts.size());
  for (size_t i = 0; i < artifacts.size(); ++i)
    packed.push_back(pack_with(dicts[i].get(), artifacts[i].bytes));
  std::lock_guard lock(mu_);
  Status s = transaction([&] { return insert_job_rows(job, artifacts, packed, refs); });
  if (!s)
    return s.error().context("storing job " + job.key.hex() + " (" + job.entry + ", " +
                             job.target + ")");
  return s;
}

static JobRecord read_job(const Bound& b) {
  JobRecord j;
  j.key = b.col_key(0);
  j.entry = b.col_text(1);
  j.symbol = b.col_symbol(2);
  j.target = b.col_text(3);
  j.triple = b.col_text(4);
  j.cpu = b.col_text(5);
  j.features = b.col_text(6);
  j.options = b.col_text(7);
  j.module_hash = b.col_key(8);
  j.toolchain = b.col_text(9);
  j.compile_ms = b.col_real(10) / 1000; // stored in microseconds
  j.created_at = b.col_i64(11);
  return j;
}

// A job's columns with its target description; a job whose description is
// missing reads with an empty one (and then fails verify's key check).
#define KILN_JOB_COLUMNS                                                                           \
  "j.key, j.entry, j.symbol, t.spec, t.triple, t.cpu, t.features, j.options, j.module_hash, "      \
  "t.toolchain, j.compile_us, j.created_at FROM jobs j LEFT JOIN targets t ON t.id = j.target_id"

Result<JobRecord> Store::get_job(const Hash128& key) {
  std::lock_guard lock(mu_);
  return read_job_row(key);
}

Result<JobRecord> Store::read_job_row(const Hash128& key) {
  KILN_TRY_ASSIGN(auto s, prepare("SELECT " KILN_JOB_COLUMNS " WHERE j.key = ?1"));
  Bound b(s);
  b.key(1, key);
  int rc = b.step();
  if (rc == SQLITE_ROW)
    return read_job(b);
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no job " + key.hex() + " in cache '" + path() + "'");
  return db_error("cannot read job " + key.hex());
}

Result<std::vector<JobRecord>> Store::list_jobs() {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT " KILN_JOB_COLUMNS " ORDER BY t.spec, j.entry, j.key"));
  Bound b(s);
  std::vector<JobRecord> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back(read_job(b));
  if (rc != SQLITE_DONE)
    return db_error("cannot list jobs");
  return out;
}

Result<std::vector<JobRef>> Store::job_refs(const Hash128& key) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT symbol, entry FROM job_refs WHERE job_key = ?1"));
  Bound b(s);
  b.key(1, key);
  std::vector<JobRef> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_symbol(0), b.col_text(1)});
  if (rc != SQLITE_DONE)
    return db_error("cannot read the references of job " + key.hex());
  // By symbol as text (SQLite orders the ones stored as bytes last).
  std::sort(out.begin(), out.end(),
            [](const JobRef& a, const JobRef& b) { return a.symbol < b.symbol; });
  return out;
}

Result<std::vector<ArtifactInfo>> Store::artifact_infos(const Hash128& key) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT format, raw_size, length(data) FROM artifacts WHERE job_key = ?1 "
                          "ORDER BY format"));
  Bound b(s);
  b.key(1, key);
  std::vector<ArtifactInfo> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_text(0), b.col_i64(1), b.col_i64(2)});
  if (rc != SQLITE_DONE)
    return db_error("cannot read the artifacts of job " + key.hex());
  return out;
}

Result<std::string> Store::get_artifact(const Hash128& job, const std::string& format) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT raw_size, checksum, data, dict_id FROM artifacts WHERE "
                          "job_key = ?1 AND format = ?2"));
  Bound b(s);
  b.key(1, job).text(2, format);
  return step_blob(b, "artifact " + format + " of job " + job.hex());
}

} // namespace kiln::storage
