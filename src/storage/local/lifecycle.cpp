// The cache's life cycle: usage counters, recency, settings, statistics,
// eviction (gc), verification, and the bulk reads and writes that export
// and import use.
#include "storage/local/statement.h"
#include "storage/local/store.h"

#include "support/compress.h"
#include "support/units.h"

#include <cstdlib>
#include <map>
#include <set>

namespace kiln::storage {

Result<int64_t> Store::count(const char* sql) {
  auto s = prepare(sql);
  if (!s)
    return s.error();
  Bound b(*s);
  if (b.step() != SQLITE_ROW)
    return db_error("cannot count");
  return b.col_i64(0);
}

Status Store::add_counters(const Counters& d) {
  if (d.empty())
    return Status::ok();
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    auto s = prepare("INSERT INTO counters(name, value) VALUES (?1, ?2) "
                     "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value");
    if (!s)
      return s.error();
    for (auto [name, v] : {std::pair{"job_hits", d.job_hits}, {"job_misses", d.job_misses},
                           {"image_hits", d.image_hits}, {"image_misses", d.image_misses},
                           {"loads", d.loads}, {"remote_hits", d.remote_hits},
                           {"remote_misses", d.remote_misses},
                           {"remote_bytes_in", d.remote_bytes_in},
                           {"remote_bytes_out", d.remote_bytes_out},
                           {"remote_errors", d.remote_errors}}) {
      if (v == 0)
        continue;
      Bound b(*s);
      b.text(1, name).i64(2, v);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot update counter " + std::string(name));
    }
    return Status::ok();
  });
}

Status Store::zero_counters() {
  std::lock_guard lock(mu_);
  return exec("DELETE FROM counters");
}

Status Store::touch_closures(const std::vector<Hash128>& closures, int64_t when) {
  if (closures.empty())
    return Status::ok();
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    auto s = prepare("UPDATE closures SET last_used = max(last_used, ?2) WHERE key = ?1");
    if (!s)
      return s.error();
    for (const Hash128& k : closures) {
      Bound b(*s);
      b.text(1, k.hex()).i64(2, when);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot mark closure " + k.hex() + " used");
    }
    return Status::ok();
  });
}

Result<int64_t> Store::live_bytes() {
  std::lock_guard lock(mu_);
  auto pages = count("PRAGMA page_count");
  auto free_pages = count("PRAGMA freelist_count");
  auto page_size = count("PRAGMA page_size");
  if (!pages || !free_pages || !page_size)
    return db_error("cannot read the file's size");
  return (*pages - *free_pages) * *page_size;
}

Result<Stats> Store::stats() {
  Stats st;
  {
    std::lock_guard lock(mu_);
    struct {
      const char* sql;
      int64_t* out;
    } counts[] = {
        {"SELECT count(*) FROM jobs", &st.jobs},
        {"SELECT count(*) FROM closures", &st.closures},
        {"SELECT count(*) FROM images", &st.images},
        {"SELECT count(*) FROM names", &st.names},
        {"SELECT (SELECT coalesce(sum(length(data)), 0) FROM artifacts) + "
         "(SELECT coalesce(sum(length(data)), 0) FROM images)",
         &st.stored_bytes},
        {"SELECT (SELECT coalesce(sum(raw_size), 0) FROM artifacts) + "
         "(SELECT coalesce(sum(raw_size), 0) FROM images)",
         &st.raw_bytes},
    };
    for (auto& c : counts) {
      auto v = count(c.sql);
      if (!v)
        return v.error();
      *c.out = *v;
    }
    auto s = prepare("SELECT target, count(*) FROM jobs GROUP BY target ORDER BY target");
    if (!s)
      return s.error();
    Bound b(*s);
    while (b.step() == SQLITE_ROW)
      st.jobs_per_target.emplace_back(b.col_text(0), b.col_i64(1));
    auto cs = prepare("SELECT name, value FROM counters");
    if (!cs)
      return cs.error();
    Bound cb(*cs);
    while (cb.step() == SQLITE_ROW) {
      std::string n = cb.col_text(0);
      int64_t v = cb.col_i64(1);
      Counters& c = st.counters;
      for (auto [name, field] :
           {std::pair{"job_hits", &c.job_hits}, {"job_misses", &c.job_misses},
            {"image_hits", &c.image_hits}, {"image_misses", &c.image_misses}, {"loads", &c.loads},
            {"remote_hits", &c.remote_hits}, {"remote_misses", &c.remote_misses},
            {"remote_bytes_in", &c.remote_bytes_in}, {"remote_bytes_out", &c.remote_bytes_out},
            {"remote_errors", &c.remote_errors}})
        if (n == name)
          *field = v;
    }
    auto pages = count("PRAGMA page_count");
    auto page_size = count("PRAGMA page_size");
    if (pages && page_size)
      st.file_bytes = *pages * *page_size;
  }
  auto live = live_bytes();
  if (live)
    st.live_bytes = *live;
  return st;
}

Result<std::string> Store::setting(const std::string& name) {
  std::lock_guard lock(mu_);
  auto s = prepare("SELECT value FROM settings WHERE name = ?1");
  if (!s)
    return s.error();
  Bound b(*s);
  b.text(1, name);
  if (b.step() != SQLITE_ROW)
    return make_error(Code::not_found, "setting " + name + " is not set");
  return b.col_text(0);
}

Status Store::set_setting(const std::string& name, const std::string& value) {
  std::lock_guard lock(mu_);
  auto s = prepare("INSERT INTO settings(name, value) VALUES (?1, ?2) "
                   "ON CONFLICT(name) DO UPDATE SET value = excluded.value");
  if (!s)
    return s.error();
  Bound b(*s);
  b.text(1, name).text(2, value);
  if (b.step() != SQLITE_DONE)
    return db_error("cannot set " + name);
  return Status::ok();
}

Result<int64_t> Store::max_size() {
  if (const char* env = std::getenv("KILN_CACHE_MAX_SIZE"); env && *env) {
    auto v = parse_size(env);
    if (!v)
      return v.error().context("KILN_CACHE_MAX_SIZE");
    return v;
  }
  auto s = setting("max_size");
  if (!s)
    return s.error().code == Code::not_found ? Result<int64_t>(kDefaultMaxSize) : s.error();
  return parse_size(*s);
}

Result<GcReport> Store::gc(const GcOptions& options) {
  GcReport rep;
  auto before = live_bytes();
  if (!before)
    return before.error();
  rep.bytes_before = rep.bytes_after = *before;
  std::unique_lock lock(mu_);
  KILN_TRY(exec("BEGIN IMMEDIATE"));
  auto fail = [&](const Error& e) -> Result<GcReport> {
    (void)exec("ROLLBACK");
    return e.context("gc of cache '" + path_ + "'");
  };
  auto live = [&]() -> int64_t {
    auto pages = count("PRAGMA page_count");
    auto free_pages = count("PRAGMA freelist_count");
    auto page_size = count("PRAGMA page_size");
    return pages && free_pages && page_size ? (*pages - *free_pages) * *page_size : 0;
  };
  // Jobs that no closure uses (their root failed, or its closure went) go
  // first: nothing can load them.
  auto orphans = count("SELECT count(*) FROM jobs WHERE NOT EXISTS "
                       "(SELECT 1 FROM closure_members m WHERE m.job_key = jobs.key)");
  if (!orphans)
    return fail(orphans.error());
  if (*orphans > 0 && (options.max_size >= 0 || options.older_than >= 0)) {
    if (Status s = exec("DELETE FROM jobs WHERE NOT EXISTS "
                        "(SELECT 1 FROM closure_members m WHERE m.job_key = jobs.key)");
        !s)
      return fail(s.error());
    rep.evicted_jobs += *orphans;
  }

  int64_t cutoff = options.older_than >= 0 ? now_seconds() - options.older_than : INT64_MIN;
  // Least recently used first; the ties of one-second recency broken by key
  // so the order is the same in every process.
  std::vector<std::pair<std::string, int64_t>> order;
  {
    auto all = prepare("SELECT key, last_used FROM closures ORDER BY last_used, key");
    if (!all)
      return fail(all.error());
    Bound b(*all);
    while (b.step() == SQLITE_ROW)
      order.emplace_back(b.col_text(0), b.col_i64(1));
  }
  std::set<std::string> keep;
  for (const Hash128& k : options.keep)
    keep.insert(k.hex());
  auto members = prepare("SELECT job_key FROM closure_members WHERE closure_key = ?1");
  auto images = prepare("SELECT count(*) FROM images WHERE closure_key = ?1");
  auto del_names = prepare("DELETE FROM names WHERE closure_key = ?1");
  auto del_closure = prepare("DELETE FROM closures WHERE key = ?1");
  auto del_job = prepare("DELETE FROM jobs WHERE key = ?1 AND NOT EXISTS "
                         "(SELECT 1 FROM closure_members m WHERE m.job_key = ?1)");
  for (auto* p : {&members, &images, &del_names, &del_closure, &del_job})
    if (!*p)
      return fail(p->error());
  for (const auto& [key, last_used] : order) {
    if (keep.count(key))
      continue;
    bool too_old = last_used < cutoff;
    bool too_big = options.max_size >= 0 && live() > options.max_size;
    if (!too_old && !too_big) {
      if (options.older_than < 0)
        break; // the rest are newer, and the size is met
      continue;
    }
    std::vector<std::string> jobs;
    {
      Bound b(*members);
      b.text(1, key);
      while (b.step() == SQLITE_ROW)
        jobs.push_back(b.col_text(0));
    }
    {
      Bound b(*images);
      b.text(1, key);
      if (b.step() == SQLITE_ROW)
        rep.evicted_images += b.col_i64(0);
    }
    for (auto* p : {&del_names, &del_closure}) {
      Bound b(**p);
      b.text(1, key);
      if (b.step() != SQLITE_DONE)
        return fail(db_error("cannot evict closure " + key));
    }
    for (const std::string& j : jobs) {
      Bound b(*del_job);
      b.text(1, j);
      if (b.step() != SQLITE_DONE)
        return fail(db_error("cannot evict job " + j));
      rep.evicted_jobs += sqlite3_changes(db_);
    }
    rep.evicted_closures.push_back(key_of(key));
  }
  rep.bytes_after = live();
  if (options.dry_run) {
    (void)exec("ROLLBACK");
    return rep;
  }
  if (Status s = exec("COMMIT"); !s)
    return fail(s.error());
  if (!rep.evicted_closures.empty() || rep.evicted_jobs > 0)
    (void)exec(options.vacuum ? "VACUUM" : "PRAGMA incremental_vacuum");
  return rep;
}

Result<std::vector<Problem>> Store::verify() {
  std::lock_guard lock(mu_);
  std::vector<Problem> out;
  auto blobs = [&](const char* sql, const char* kind, bool closure_key) -> Status {
    auto s = prepare(sql);
    if (!s)
      return s.error();
    Bound b(*s);
    int rc;
    while ((rc = b.step()) == SQLITE_ROW) {
      std::string key = b.col_text(0), what = b.col_text(1);
      int64_t raw_size = b.col_i64(2), checksum = b.col_i64(3);
      std::string label = std::string(kind) + " " + what + " of " +
                          (closure_key ? "closure " : "job ") + key;
      auto raw = raw_size < 0 ? Result<std::string>(make_error(Code::corrupt, "negative size"))
                              : zstd_decompress(b.col_blob(4), size_t(raw_size));
      if (!raw)
        out.push_back({kind, key, label + ": " + raw.error().message});
      else if (checksum_of(*raw) != checksum)
        out.push_back({kind, key, label + " fails its checksum"});
    }
    return rc == SQLITE_DONE ? Status::ok() : Status(db_error("cannot read blobs"));
  };
  KILN_TRY(blobs("SELECT job_key, format, raw_size, checksum, data FROM artifacts "
                 "ORDER BY job_key, format",
                 "artifact", false));
  KILN_TRY(blobs("SELECT closure_key, arch || ' (' || linker || ')', raw_size, checksum, data "
                 "FROM images ORDER BY closure_key, arch",
                 "image", true));

  struct Check {
    const char* sql;
    const char* kind;
    const char* what;
  };
  // Each query lists (key, detail) pairs that are problems.
  const Check checks[] = {
      {"SELECT c.key, c.root_job FROM closures c WHERE NOT EXISTS "
       "(SELECT 1 FROM jobs j WHERE j.key = c.root_job)",
       "closure", "root job missing: "},
      {"SELECT c.key, c.root_job FROM closures c WHERE NOT EXISTS (SELECT 1 FROM closure_members "
       "m WHERE m.closure_key = c.key AND m.job_key = c.root_job)",
       "closure", "root job is not a member: "},
      {"SELECT m.closure_key, m.job_key FROM closure_members m WHERE NOT EXISTS "
       "(SELECT 1 FROM jobs j WHERE j.key = m.job_key)",
       "closure", "member job missing: "},
      {"SELECT m.closure_key, m.symbol FROM closure_members m JOIN jobs j ON j.key = m.job_key "
       "WHERE j.symbol != m.symbol",
       "closure", "member does not define its symbol: "},
      // Every deferred symbol a member leaves open must be satisfied within
      // the closure.
      {"SELECT m.closure_key, r.symbol FROM closure_members m JOIN job_refs r ON "
       "r.job_key = m.job_key WHERE NOT EXISTS (SELECT 1 FROM closure_members m2 WHERE "
       "m2.closure_key = m.closure_key AND m2.symbol = r.symbol)",
       "closure", "open deferred symbol unresolved: "},
      {"SELECT j.key, a.format FROM jobs j LEFT JOIN artifacts a ON a.job_key = j.key "
       "WHERE a.job_key IS NULL",
       "job", "has no artifacts"},
      {"SELECT n.name || ' (' || n.target || ')', n.closure_key FROM names n WHERE NOT EXISTS "
       "(SELECT 1 FROM closures c WHERE c.key = n.closure_key)",
       "name", "names a missing closure: "},
  };
  for (const Check& c : checks) {
    auto s = prepare(c.sql);
    if (!s)
      return s.error();
    Bound b(*s);
    int rc;
    while ((rc = b.step()) == SQLITE_ROW)
      out.push_back({c.kind, b.col_text(0), std::string(c.kind) + " " + b.col_text(0) + ": " +
                                                c.what + b.col_text(1)});
    if (rc != SQLITE_DONE)
      return db_error("cannot verify");
  }
  return out;
}

Result<std::vector<ClosureRecord>> Store::list_closures() {
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mu_);
    auto s = prepare("SELECT key FROM closures ORDER BY key");
    if (!s)
      return s.error();
    Bound b(*s);
    while (b.step() == SQLITE_ROW)
      keys.push_back(b.col_text(0));
  }
  std::vector<ClosureRecord> out;
  for (const std::string& k : keys) {
    auto c = get_closure(key_of(k));
    if (!c)
      return c.error();
    out.push_back(c.take());
  }
  return out;
}

Result<std::vector<ImageRecord>> Store::images_of(const Hash128& closure) {
  std::lock_guard lock(mu_);
  auto s = prepare("SELECT arch, linker, format, raw_size, checksum, data FROM images "
                   "WHERE closure_key = ?1 ORDER BY arch, linker");
  if (!s)
    return s.error();
  Bound b(*s);
  b.text(1, closure.hex());
  std::vector<ImageRecord> out;
  while (b.step() == SQLITE_ROW) {
    ImageRecord r{{closure, b.col_text(0), b.col_text(1)}, b.col_text(2), {}};
    std::string what = "image of closure " + closure.hex() + " for " + r.key.arch;
    int64_t raw_size = b.col_i64(3);
    if (raw_size < 0)
      return make_error(Code::corrupt, what + " has a negative size");
    auto raw = zstd_decompress(b.col_blob(5), size_t(raw_size));
    if (!raw)
      return raw.error().context(what);
    if (checksum_of(*raw) != b.col_i64(4))
      return make_error(Code::corrupt, what + " fails its checksum");
    r.bytes = raw.take();
    out.push_back(std::move(r));
  }
  return out;
}

Status Store::put_bundle(const BundleData& data) {
  std::vector<std::vector<std::string>> packed_jobs;
  for (const BundleData::Job& j : data.jobs) {
    std::vector<std::string> packed;
    for (const Artifact& a : j.artifacts)
      packed.push_back(zstd_compress(a.bytes));
    packed_jobs.push_back(std::move(packed));
  }
  std::vector<std::string> packed_images;
  for (const ImageRecord& i : data.images)
    packed_images.push_back(zstd_compress(i.bytes));
  std::lock_guard lock(mu_);
  int64_t now = now_seconds();
  return transaction([&]() -> Status {
    for (size_t i = 0; i < data.jobs.size(); ++i)
      KILN_TRY(insert_job_rows(data.jobs[i].record, data.jobs[i].artifacts, packed_jobs[i],
                               data.jobs[i].refs));
    std::map<std::string, std::vector<NameRecord>> names;
    for (const NameRecord& n : data.names)
      names[n.closure.hex()].push_back(n);
    for (const ClosureRecord& c : data.closures)
      KILN_TRY(insert_closure_rows(c, names[c.key.hex()], now));
    for (size_t i = 0; i < data.images.size(); ++i)
      KILN_TRY(insert_image_row(data.images[i], packed_images[i]));
    return Status::ok();
  });
}

} // namespace kiln::storage
