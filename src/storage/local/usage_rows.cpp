// The cache file's half of usage: counters, recency, statistics and
// settings in SQL. The size limit and the reports over them are
// storage/usage.cpp's and Upkeep::max_size's.
#include "storage/usage.h"

#include "storage/local/statement.h"
#include "storage/local/store.h"

namespace kiln::storage {

Status Store::zero_counters() {
  std::lock_guard lock(mu_);
  Database::Bookkeeping counters(*db_);
  return exec("DELETE FROM counters");
}

Status Store::record_usage(const std::vector<Hash128>& closures, int64_t when,
                           const Counters& d) {
  if (closures.empty() && d.empty())
    return Status::ok();
  std::lock_guard lock(mu_);
  Database::Bookkeeping usage(*db_);
  return transaction([&]() -> Status {
    if (!closures.empty()) {
      // The WHERE leaves a row already marked, and its page, as they are.
      KILN_TRY_ASSIGN(auto s, prepare("UPDATE closures SET last_used = ?2 WHERE key = ?1 AND "
                                      "last_used < ?2"));
      for (const Hash128& k : closures) {
        Bound b(s);
        b.key(1, k).i64(2, when);
        if (b.step() != SQLITE_DONE)
          return db_error("cannot mark closure " + k.hex() + " used");
      }
    }
    if (d.empty())
      return Status::ok();
    KILN_TRY_ASSIGN(auto s,
                    prepare("INSERT INTO counters(name, value) VALUES (?1, ?2) "
                            "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value"));
    for (auto [name, v] : {std::pair{"job_hits", d.job_hits},
                           {"job_misses", d.job_misses},
                           {"image_hits", d.image_hits},
                           {"image_misses", d.image_misses},
                           {"loads", d.loads},
                           {"remote_hits", d.remote_hits},
                           {"remote_misses", d.remote_misses},
                           {"remote_bytes_in", d.remote_bytes_in},
                           {"remote_bytes_out", d.remote_bytes_out},
                           {"remote_errors", d.remote_errors}}) {
      if (v == 0)
        continue;
      Bound b(s);
      b.text(1, name).i64(2, v);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot update counter " + std::string(name));
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
  (void)absorb_load_log(); // the loads served from the published images
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
         "(SELECT coalesce(sum(length(data)), 0) FROM images) + "
         "(SELECT coalesce(sum(length(data)), 0) FROM dictionaries)",
         &st.stored_bytes},
        {"SELECT (SELECT coalesce(sum(raw_size), 0) FROM artifacts) + "
         "(SELECT coalesce(sum(raw_size), 0) FROM images)",
         &st.raw_bytes},
    };
    for (auto& c : counts) {
      KILN_TRY_ASSIGN(auto v, count(c.sql));
      *c.out = v;
    }
    KILN_TRY_ASSIGN(auto s,
                    prepare("SELECT t.spec, count(*) FROM jobs j JOIN targets t ON "
                            "t.id = j.target_id GROUP BY t.spec ORDER BY t.spec"));
    Bound b(s);
    while (b.step() == SQLITE_ROW)
      st.jobs_per_target.emplace_back(b.col_text(0), b.col_i64(1));
    KILN_TRY_ASSIGN(auto cs, prepare("SELECT name, value FROM counters"));
    Bound cb(cs);
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
  // Settings are meta rows "setting <name>" (schema/0013_baseline.sql).
  KILN_TRY_ASSIGN(auto s, prepare("SELECT value FROM meta WHERE key = 'setting ' || ?1"));
  Bound b(s);
  b.text(1, name);
  if (b.step() != SQLITE_ROW)
    return make_error(Code::not_found, "setting " + name + " is not set");
  return b.col_text(0);
}

Status Store::set_setting(const std::string& name, const std::string& value) {
  std::lock_guard lock(mu_);
  Database::Bookkeeping setting(*db_);
  KILN_TRY_ASSIGN(auto s, prepare("INSERT INTO meta(key, value) VALUES ('setting ' || ?1, ?2) "
                                  "ON CONFLICT(key) DO UPDATE SET value = excluded.value"));
  Bound b(s);
  b.text(1, name).text(2, value);
  if (b.step() != SQLITE_DONE)
    return db_error("cannot set " + name);
  return Status::ok();
}

} // namespace kiln::storage
