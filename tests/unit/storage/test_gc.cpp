// Unit tests for eviction (src/storage/gc.cpp, src/storage/local/gc_rows.cpp): the policy read from
// command-line text, least recently used closures first with ties broken by
// key, jobs no closure uses first, the keep list, a dry run that changes
// nothing, jobs a surviving closure shares kept, the size target met by
// evicting only what it needs, the age limit, and the cache's own limit when
// the policy has none; leases that keep a running precompile's jobs and
// closures; put_closure over a vanished job; names that record their unit
// and report a move; read_root's one-transaction read.
#include "storage/gc.h"
#include "storage/local/statement.h"

#include "core/keys.h"

#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"

#include "support/files.h"

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

// Bytes zstd cannot shrink, so a job's size in the file is known.
std::string incompressible(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (char& ch : out)
    ch = char(rng() & 0xff);
  return out;
}

JobRecord job(const std::string& entry) {
  JobRecord j;
  j.key = hash128("gc-test job " + entry);
  j.entry = entry;
  j.symbol = "__kiln_deferred_" + hash128("symbol of " + entry).hex();
  j.target = "host";
  j.options = "-O2";
  j.module_hash = hash128("module of " + entry);
  j.toolchain = "test";
  return j;
}

void put_job(Store& store, const JobRecord& j, size_t size = 64) {
  REQUIRE(store.jobs().put_job(j, {{"obj", incompressible(size, hash128(j.entry).lo)}}, {}));
}

/// A root named `name` whose closure holds its own job and `shared`.
// The first column of a one-row query on the cache file at `path`, read
// through a connection of its own.
int64_t scalar_in(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  int64_t n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

ClosureRecord put_root(Store& store, const std::string& name, size_t size = 64,
                       const std::vector<JobRecord>& shared = {}) {
  JobRecord root = job(name);
  put_job(store, root, size);
  ClosureRecord c;
  c.root_job = root.key;
  c.target = "host";
  c.members = {{root.symbol, root.key, ""}};
  for (const JobRecord& s : shared)
    c.members.push_back({s.symbol, s.key, ""});
  std::sort(c.members.begin(), c.members.end(),
            [](const ClosureMember& a, const ClosureMember& b) { return a.symbol < b.symbol; });
  kiln::core::ClosureMap map;
  for (const ClosureMember& m : c.members)
    map.emplace_back(m.symbol, m.job);
  c.key = kiln::core::closure_key(root.key, map); // as the driver keys it
  REQUIRE(store.closures().put_closure(c, {{name, "host", c.key}}));
  return c;
}

bool has_closure(Store& store, const Hash128& key) {
  auto c = store.closures().get_closure(key);
  if (!c)
    CHECK(c.error().code == Code::not_found);
  return bool(c);
}

bool has_job(Store& store, const std::string& entry) {
  auto j = store.jobs().get_job(job(entry).key);
  if (!j)
    CHECK(j.error().code == Code::not_found);
  return bool(j);
}

GcReport gc_ok(Store& store, const GcPolicy& policy) {
  auto rep = store.upkeep().gc(policy);
  INFO((rep ? std::string() : rep.error().message));
  REQUIRE(rep);
  return rep.take();
}

int64_t now() { return int64_t(std::time(nullptr)); }

} // namespace

TEST_CASE("gc: parse_gc_policy reads a size and an age; empty text leaves a limit unset") {
  auto both = parse_gc_policy("500M", "30d");
  REQUIRE(both);
  CHECK(both->max_size == int64_t(500) << 20);
  CHECK(both->older_than == int64_t(30) * 86400);
  CHECK(both->has_limit());
  CHECK_FALSE(both->dry_run);
  CHECK(both->vacuum);
  CHECK(both->keep.empty());

  auto none = parse_gc_policy("", "");
  REQUIRE(none);
  CHECK(none->max_size < 0);
  CHECK(none->older_than < 0);
  CHECK_FALSE(none->has_limit());

  auto size_only = parse_gc_policy("1G", "");
  REQUIRE(size_only);
  CHECK(size_only->max_size == int64_t(1) << 30);
  CHECK(size_only->older_than < 0);
  auto age_only = parse_gc_policy("", "2h");
  REQUIRE(age_only);
  CHECK(age_only->max_size < 0);
  CHECK(age_only->older_than == 7200);
  CHECK(age_only->has_limit());

  auto bad_size = parse_gc_policy("lots", "");
  REQUIRE_FALSE(bad_size);
  CHECK(bad_size.error().code == Code::invalid_argument);
  auto bad_age = parse_gc_policy("1G", "7 fortnights");
  REQUIRE_FALSE(bad_age);
  CHECK(bad_age.error().code == Code::invalid_argument);
}

TEST_CASE("gc: least recently used closures go first, ties broken by key") {
  TestCache c = open_cache();
  ClosureRecord a = put_root(*c.store, "a"), b = put_root(*c.store, "b"),
                d = put_root(*c.store, "d"), e = put_root(*c.store, "e");
  int64_t t = now();
  REQUIRE(c.store->upkeep().touch_closures({a.key}, t + 200));
  REQUIRE(c.store->upkeep().touch_closures({b.key}, t + 100));
  REQUIRE(c.store->upkeep().touch_closures({d.key, e.key}, t + 300));
  // Recency only moves forward: an older touch does not make b older.
  REQUIRE(c.store->upkeep().touch_closures({b.key}, t + 10));

  GcPolicy all;
  all.max_size = 0;
  GcReport rep = gc_ok(*c.store, all);
  const Hash128& first_tied = d.key < e.key ? d.key : e.key;
  const Hash128& second_tied = d.key < e.key ? e.key : d.key;
  CHECK(rep.evicted_closures == std::vector<Hash128>{b.key, a.key, first_tied, second_tied});
  CHECK(rep.evicted_jobs == 4);
  CHECK(rep.evicted_images == 0);
  for (const ClosureRecord& k : {a, b, d, e})
    CHECK_FALSE(has_closure(*c.store, k.key));
  auto names = c.store->names().list_names();
  REQUIRE(names);
  CHECK(names->empty());
  auto st = c.store->upkeep().stats();
  REQUIRE(st);
  CHECK(st->jobs == 0);
  CHECK(st->closures == 0);
}

TEST_CASE("gc: jobs no closure uses go first, and a closure's images go with it") {
  TestCache c = open_cache();
  ClosureRecord a = put_root(*c.store, "a");
  put_job(*c.store, job("orphan"));
  REQUIRE(c.store->images().put_image({a.key, "x86_64-linux", "lld 22"}, "so", "image bytes"));
  REQUIRE(
      c.store->images().put_image({a.key, "x86_64-linux", "lld 23"}, "so", "other image bytes"));

  // A far-off age limit: no closure is old enough, the orphan still goes.
  GcPolicy old;
  old.older_than = 365 * 86400;
  GcReport rep = gc_ok(*c.store, old);
  CHECK(rep.evicted_closures.empty());
  CHECK(rep.evicted_jobs == 1);
  CHECK_FALSE(has_job(*c.store, "orphan"));
  CHECK(has_job(*c.store, "a"));

  GcPolicy all;
  all.max_size = 0;
  GcReport gone = gc_ok(*c.store, all);
  CHECK(gone.evicted_closures == std::vector<Hash128>{a.key});
  CHECK(gone.evicted_images == 2);
  CHECK(gone.evicted_jobs == 1);
  auto images = c.store->images().images_of(a.key);
  REQUIRE(images);
  CHECK(images->empty());
}

TEST_CASE("member sets: closures with the same members share one set and one image, which gc "
          "keeps until the last of them goes") {
  // Three roots of one deferred cycle: each closure holds all three jobs.
  TestCache c = open_cache();
  Store& st = *c.store;
  std::vector<JobRecord> jobs = {job("cyc_a"), job("cyc_b"), job("cyc_c")};
  for (const JobRecord& j : jobs)
    put_job(st, j);
  std::vector<ClosureRecord> closures;
  for (const JobRecord& root : jobs) {
    ClosureRecord cl;
    cl.key = hash128("member-set closure " + root.entry);
    cl.root_job = root.key;
    cl.target = "host";
    for (const JobRecord& j : jobs)
      cl.members.push_back({j.symbol, j.key, ""});
    std::sort(cl.members.begin(), cl.members.end(),
              [](const ClosureMember& a, const ClosureMember& b) { return a.symbol < b.symbol; });
    REQUIRE(st.closures().put_closure(cl, {{root.entry, "host", cl.key}}));
    closures.push_back(cl);
  }
  // A lone root (its one member is its root job): no set at all.
  ClosureRecord alone = put_root(st, "alone");
  auto rows = [&](const std::string& sql) { return scalar_in(c.path(), sql); };
  CHECK(rows("SELECT count(*) FROM member_sets") == 3);
  CHECK(rows("SELECT count(DISTINCT member_set) FROM closures") == 1);
  CHECK(rows("SELECT count(*) FROM closures WHERE member_set IS NULL") == 1);
  CHECK(rows("SELECT count(*) FROM closure_members") == 3 * 3 + 1);
  for (const ClosureRecord& cl : closures) {
    auto back = st.closures().get_closure(cl.key);
    REQUIRE(back);
    CHECK(back->root_job == cl.root_job);
    CHECK(back->members.size() == 3);
  }
  // The set is stored under core::member_set_key, the key the driver groups
  // its image links by.
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open_v2(c.path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT member_set FROM closures WHERE key = ?1", -1, &s,
                               nullptr) == SQLITE_OK);
    std::string key = kiln::storage::key_bytes(closures[1].key);
    sqlite3_bind_blob(s, 1, key.data(), 16, SQLITE_TRANSIENT);
    REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    CHECK(std::string(static_cast<const char*>(sqlite3_column_blob(s, 0)),
                      size_t(sqlite3_column_bytes(s, 0))) ==
          kiln::storage::key_bytes(kiln::core::member_set_key(closures[1].members)));
    sqlite3_finalize(s);
    sqlite3_close(db);
  }
  // Read together, the set is read once: the first closure of it holds the
  // members and the others point at it.
  {
    auto batch =
        st.closures().get_closures({closures[2].key, alone.key, closures[0].key, closures[1].key});
    REQUIRE(batch);
    CHECK(batch->first_of_set == std::vector<size_t>{0, 1, 0, 0});
    CHECK(batch->closures[0].members.size() == 3);
    CHECK(batch->closures[0].root_job == closures[2].root_job);
    CHECK(batch->closures[1].members.size() == 1);
    CHECK(batch->closures[2].members.empty());
    CHECK(batch->closures[2].root_job == closures[0].root_job);
    CHECK(batch->closures[3].key == closures[1].key);
    CHECK(batch->closures[3].target == "host");
    auto missing = st.closures().get_closures({closures[0].key, hash128("no such closure")});
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Code::not_found);
  }

  // One image, stored for the first root, serves all three; not the other.
  const std::string arch = "x86_64-linux", linker = "lld 22";
  REQUIRE(st.images().put_image({closures[0].key, arch, linker}, "so", "cycle image"));
  for (const ClosureRecord& cl : closures) {
    CHECK(*st.images().get_image({cl.key, arch, linker}) == "cycle image");
    CHECK(*st.images().get_image_any_linker(cl.key, arch) == "cycle image");
    auto images = st.images().images_of(cl.key);
    REQUIRE(images);
    REQUIRE(images->size() == 1);
    CHECK(images->front().key.closure == cl.key);
  }
  CHECK(st.images().get_image({alone.key, arch, linker}).error().code == Code::not_found);
  // A closure's own image comes first.
  REQUIRE(st.images().put_image({closures[2].key, arch, linker}, "so", "own image"));
  CHECK(*st.images().get_image({closures[2].key, arch, linker}) == "own image");
  CHECK(*st.images().get_image({closures[1].key, arch, linker}) == "cycle image");
  auto listed = st.images().images_of(closures[2].key);
  REQUIRE(listed);
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().bytes == "own image");

  // gc: the set and its jobs stay while any closure names it.
  GcPolicy some;
  some.max_size = 0;
  GcOptions first;
  first.max_size = 0;
  first.keep = {closures[1].key, closures[2].key};
  auto rep = st.upkeep().gc(first);
  REQUIRE(rep);
  CHECK(std::count(rep->evicted_closures.begin(), rep->evicted_closures.end(),
                   closures[0].key) == 1);
  CHECK(rows("SELECT count(*) FROM member_sets") == 3);
  for (const JobRecord& j : jobs)
    CHECK(has_job(st, j.entry));
  CHECK_FALSE(has_job(st, "alone"));
  // The first root's image went with it; the third's own still serves the second.
  CHECK(*st.images().get_image({closures[1].key, arch, linker}) == "own image");
  GcReport all = gc_ok(st, some);
  CHECK(all.evicted_closures.size() == 2);
  CHECK(rows("SELECT count(*) FROM member_sets") == 0);
  CHECK(rows("SELECT count(*) FROM jobs") == 0);
}

TEST_CASE("member sets: a one-member closure keyed otherwise keeps its set; gc takes both "
          "kinds, and a job a planted row still names stays") {
  TestCache c = open_cache();
  Store& st = *c.store;
  ClosureRecord lone = put_root(st, "lone");
  JobRecord j = job("other");
  put_job(st, j);
  ClosureRecord odd;
  odd.key = hash128("a closure key no member gives");
  odd.root_job = j.key;
  odd.target = "host";
  odd.members = {{j.symbol, j.key, ""}};
  REQUIRE(st.closures().put_closure(odd, {{"other", "host", odd.key}}));
  auto count = [&](const std::string& sql) { return scalar_in(c.path(), sql); };
  CHECK(count("SELECT count(*) FROM closures WHERE member_set IS NULL") == 1);
  CHECK(count("SELECT count(*) FROM member_sets") == 1);
  for (const ClosureRecord& cl : {lone, odd}) {
    auto back = st.closures().get_closure(cl.key);
    REQUIRE(back);
    REQUIRE(back->members.size() == 1);
    CHECK(back->members[0].job == cl.root_job);
  }
  // A row planted behind the store's back: a lone closure under a key no
  // member gives, rooted at the lone root's job. gc cannot see it from the
  // job, the foreign key keeps the job, and gc finishes.
  c.store.reset();
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(c.path().c_str(), &db) == SQLITE_OK);
    std::string sql = "INSERT INTO closures VALUES (x'" + hash128("planted").hex() + "', x'" +
                      lone.root_job.hex() + "', 'host', NULL, 0, 0)";
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  c.open();
  GcOptions all;
  all.max_size = 0;
  all.keep = {hash128("planted")};
  auto rep = c.store->upkeep().gc(all);
  REQUIRE_MESSAGE(rep, (rep ? std::string() : rep.error().message));
  CHECK(rep->evicted_closures.size() == 2);
  CHECK(count("SELECT count(*) FROM member_sets") == 0);
  CHECK(count("SELECT count(*) FROM jobs") == 1); // the planted row's root
  CHECK(count("SELECT count(*) FROM closures") == 1);
}

TEST_CASE("gc: a policy without limits evicts nothing, not even orphans") {
  TestCache c = open_cache();
  ClosureRecord a = put_root(*c.store, "a");
  put_job(*c.store, job("orphan"));
  GcReport rep = gc_ok(*c.store, GcPolicy{});
  CHECK(rep.evicted_closures.empty());
  CHECK(rep.evicted_jobs == 0);
  CHECK(has_closure(*c.store, a.key));
  CHECK(has_job(*c.store, "orphan"));
}

TEST_CASE("gc: the keep list is never evicted") {
  TestCache c = open_cache();
  ClosureRecord a = put_root(*c.store, "a"), b = put_root(*c.store, "b"),
                d = put_root(*c.store, "d");
  int64_t t = now();
  REQUIRE(c.store->upkeep().touch_closures({a.key}, t + 100));
  REQUIRE(c.store->upkeep().touch_closures({b.key}, t + 200));
  REQUIRE(c.store->upkeep().touch_closures({d.key}, t + 300));
  GcPolicy policy;
  policy.max_size = 0;
  policy.keep = {a.key};
  GcReport rep = gc_ok(*c.store, policy);
  CHECK(rep.evicted_closures == std::vector<Hash128>{b.key, d.key});
  CHECK(has_closure(*c.store, a.key));
  CHECK(has_job(*c.store, "a"));
  auto name = c.store->names().resolve_name("a", "host");
  REQUIRE(name);
  CHECK(*name == a.key);
  CHECK_FALSE(has_closure(*c.store, b.key));
  CHECK_FALSE(has_job(*c.store, "b"));
}

TEST_CASE("gc: a dry run reports what it would evict and changes nothing") {
  TestCache c = open_cache();
  ClosureRecord a = put_root(*c.store, "a", 16384), b = put_root(*c.store, "b", 16384);
  put_job(*c.store, job("orphan"));
  REQUIRE(c.store->images().put_image({a.key, "x86_64-linux", "lld 22"}, "so", "image bytes"));
  REQUIRE(c.store->upkeep().touch_closures({b.key}, now() + 100));
  auto before = c.store->upkeep().stats();
  REQUIRE(before);

  GcPolicy policy;
  policy.max_size = 0;
  policy.dry_run = true;
  GcReport dry = gc_ok(*c.store, policy);
  CHECK(dry.evicted_closures == std::vector<Hash128>{a.key, b.key});
  CHECK(dry.evicted_jobs == 3);
  CHECK(dry.evicted_images == 1);
  CHECK(dry.bytes_after < dry.bytes_before);

  auto after = c.store->upkeep().stats();
  REQUIRE(after);
  CHECK(after->jobs == before->jobs);
  CHECK(after->closures == before->closures);
  CHECK(after->images == before->images);
  CHECK(after->names == before->names);
  CHECK(after->live_bytes == before->live_bytes);
  CHECK(has_closure(*c.store, a.key));
  CHECK(has_job(*c.store, "orphan"));

  // The same policy for real evicts exactly what the dry run said.
  policy.dry_run = false;
  GcReport real = gc_ok(*c.store, policy);
  CHECK(real.evicted_closures == dry.evicted_closures);
  CHECK(real.evicted_jobs == dry.evicted_jobs);
  CHECK(real.evicted_images == dry.evicted_images);
}

TEST_CASE("gc: a job that a surviving closure shares is kept with it") {
  TestCache c = open_cache();
  JobRecord shared = job("shared");
  put_job(*c.store, shared);
  ClosureRecord x = put_root(*c.store, "x", 64, {shared});
  ClosureRecord y = put_root(*c.store, "y", 64, {shared});
  REQUIRE(c.store->upkeep().touch_closures({y.key}, now() + 100));

  GcPolicy policy;
  policy.max_size = 0;
  policy.keep = {y.key};
  GcReport rep = gc_ok(*c.store, policy);
  CHECK(rep.evicted_closures == std::vector<Hash128>{x.key});
  CHECK(rep.evicted_jobs == 1); // x's own job, not the shared one
  CHECK_FALSE(has_job(*c.store, "x"));
  CHECK(has_job(*c.store, "shared"));
  CHECK(has_job(*c.store, "y"));
  auto survivor = c.store->closures().get_closure(y.key);
  REQUIRE(survivor);
  CHECK(survivor->members.size() == 2);
  auto art = c.store->jobs().get_artifact(shared.key, "obj");
  CHECK(art);

  // Once no closure holds it, it goes with the last one.
  policy.keep.clear();
  GcReport last = gc_ok(*c.store, policy);
  CHECK(last.evicted_closures == std::vector<Hash128>{y.key});
  CHECK(last.evicted_jobs == 2);
  CHECK_FALSE(has_job(*c.store, "shared"));
}

TEST_CASE("gc: a size target evicts least recently used closures only until it is met") {
  TestCache c = open_cache();
  constexpr size_t kJob = 64 * 1024;
  ClosureRecord a = put_root(*c.store, "a", kJob), b = put_root(*c.store, "b", kJob),
                d = put_root(*c.store, "d", kJob);
  int64_t t = now();
  REQUIRE(c.store->upkeep().touch_closures({a.key}, t + 300));
  REQUIRE(c.store->upkeep().touch_closures({b.key}, t + 100));
  REQUIRE(c.store->upkeep().touch_closures({d.key}, t + 200));
  auto live = c.store->upkeep().live_bytes();
  REQUIRE(live);
  REQUIRE(*live > int64_t(3 * kJob));

  // A quarter of a job over the target: one eviction meets it.
  GcPolicy policy;
  policy.max_size = *live - int64_t(kJob / 4);
  GcReport one = gc_ok(*c.store, policy);
  CHECK(one.bytes_before == *live);
  CHECK(one.evicted_closures == std::vector<Hash128>{b.key});
  CHECK(one.evicted_jobs == 1);
  CHECK(one.bytes_after <= policy.max_size);
  CHECK(has_closure(*c.store, a.key));
  CHECK(has_closure(*c.store, d.key));

  // A target the cache already meets evicts nothing.
  GcPolicy met;
  met.max_size = int64_t(1) << 40;
  GcReport none = gc_ok(*c.store, met);
  CHECK(none.evicted_closures.empty());
  CHECK(none.evicted_jobs == 0);

  // Room for about one job: the two least recently used go, in order.
  auto now_live = c.store->upkeep().live_bytes();
  REQUIRE(now_live);
  GcPolicy two;
  two.max_size = *now_live - int64_t(kJob) - int64_t(kJob / 4);
  GcReport rep = gc_ok(*c.store, two);
  CHECK(rep.evicted_closures == std::vector<Hash128>{d.key, a.key});
  CHECK(rep.bytes_after <= two.max_size);
}

TEST_CASE("gc: an age limit evicts the closures unused for longer, whatever their size") {
  TestCache c = open_cache();
  ClosureRecord stale = put_root(*c.store, "stale"), fresh = put_root(*c.store, "fresh");
  REQUIRE(c.store->upkeep().touch_closures({fresh.key}, now() + 1000));
  // Recency has one-second resolution: let "stale" fall behind the cutoff.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  GcPolicy policy;
  policy.older_than = 0;
  GcReport rep = gc_ok(*c.store, policy);
  CHECK(rep.evicted_closures == std::vector<Hash128>{stale.key});
  CHECK(has_closure(*c.store, fresh.key));
  CHECK_FALSE(has_closure(*c.store, stale.key));
}

TEST_CASE("gc: collect_garbage gives a policy without limits the cache's own limit") {
  TestCache c = open_cache();
  EnvVar unset("KILN_CACHE_MAX_SIZE", nullptr);
  ClosureRecord a = put_root(*c.store, "a");

  // The default limit (gigabytes) is met: nothing goes.
  auto kept = collect_garbage(*c.store, GcPolicy{});
  REQUIRE(kept);
  CHECK(kept->evicted_closures.empty());
  CHECK(has_closure(*c.store, a.key));

  // A one-byte limit in the cache's settings: everything goes.
  REQUIRE(c.store->upkeep().set_setting("max_size", "1"));
  auto rep = collect_garbage(*c.store, GcPolicy{});
  REQUIRE(rep);
  CHECK(rep->evicted_closures == std::vector<Hash128>{a.key});
  CHECK_FALSE(has_closure(*c.store, a.key));

  // A policy with a limit of its own is not given the cache's.
  ClosureRecord b = put_root(*c.store, "b");
  GcPolicy far;
  far.older_than = 365 * 86400;
  auto own = collect_garbage(*c.store, far);
  REQUIRE(own);
  CHECK(own->evicted_closures.empty());
  CHECK(has_closure(*c.store, b.key));

  // A malformed limit is an error, and nothing is evicted.
  EnvVar bad("KILN_CACHE_MAX_SIZE", "huge");
  auto refused = collect_garbage(*c.store, GcPolicy{});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Code::invalid_argument);
  CHECK(has_closure(*c.store, b.key));
}

TEST_CASE("gc: leased jobs, and closures rooted at them, survive until the lease goes") {
  TestCache c = open_cache();
  ClosureRecord a = put_root(*c.store, "a");
  put_job(*c.store, job("stored"));
  // A lease may name a job nobody has stored yet.
  REQUIRE(c.store->claims().lease_jobs("run1", {job("stored").key, job("a").key, job("later").key},
                                       now() + 3600));
  put_job(*c.store, job("later"));
  GcPolicy policy;
  policy.max_size = 0;
  GcReport held = gc_ok(*c.store, policy);
  CHECK(held.evicted_closures.empty());
  CHECK(held.evicted_jobs == 0);
  CHECK(has_job(*c.store, "stored"));
  CHECK(has_job(*c.store, "later"));
  CHECK(has_closure(*c.store, a.key));

  REQUIRE(c.store->claims().release_leases("run1"));
  GcReport freed = gc_ok(*c.store, policy);
  CHECK(freed.evicted_closures == std::vector<Hash128>{a.key});
  CHECK(freed.evicted_jobs == 3);
  CHECK_FALSE(has_job(*c.store, "stored"));
}

TEST_CASE("gc: a lapsed lease (a crashed precompile) protects nothing") {
  TestCache c = open_cache();
  put_job(*c.store, job("orphan"));
  REQUIRE(c.store->claims().lease_jobs("crashed", {job("orphan").key}, now() - 1));
  GcPolicy policy;
  policy.max_size = 0;
  CHECK(gc_ok(*c.store, policy).evicted_jobs == 1);
  CHECK_FALSE(has_job(*c.store, "orphan"));
}

TEST_CASE("gc: put_closure over an evicted member job names the job") {
  TestCache c = open_cache();
  JobRecord root = job("root"), gone = job("gone");
  put_job(*c.store, root);
  ClosureRecord cl;
  cl.key = hash128("closure over a vanished job");
  cl.root_job = root.key;
  cl.target = "host";
  cl.members = {{root.symbol, root.key, ""}, {gone.symbol, gone.key, ""}};
  Status s = c.store->closures().put_closure(cl, {{"root", "host", cl.key}});
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Code::not_found);
  CHECK(s.error().message.find(gone.key.hex()) != std::string::npos);
  CHECK(s.error().message.find("no longer in cache") != std::string::npos);
  CHECK(s.error().message.find("FOREIGN KEY") == std::string::npos);
  CHECK_FALSE(has_closure(*c.store, cl.key));
  CHECK_FALSE(c.store->names().resolve_name("root", "host"));
}

TEST_CASE("names: point_name records the unit and reports a move to another closure") {
  TestCache c = open_cache();
  ClosureRecord a = put_root(*c.store, "a"), b = put_root(*c.store, "b");
  // put_root named "a" without a unit.
  auto unknown = c.store->names().name_unit("a", "host");
  REQUIRE(unknown);
  CHECK(unknown->empty());
  auto same = c.store->names().point_name({"a", "host", a.key}, "a.ll");
  REQUIRE(same);
  CHECK_FALSE(same->has_value()); // the same closure: not a move
  CHECK(*c.store->names().name_unit("a", "host") == "a.ll");

  auto moved = c.store->names().point_name({"a", "host", b.key}, "b.ll, c.ll");
  REQUIRE(moved);
  REQUIRE(moved->has_value());
  const NameMove& m = **moved;
  CHECK(m.name == "a");
  CHECK(m.target == "host");
  CHECK(m.old_closure == a.key);
  CHECK(m.old_unit == "a.ll");
  CHECK(m.new_closure == b.key);
  CHECK(m.new_unit == "b.ll, c.ll");
  CHECK(*c.store->names().resolve_name("a", "host") == b.key);
  CHECK(*c.store->names().name_unit("a", "host") == "b.ll, c.ll");

  auto fresh = c.store->names().point_name({"new", "host", b.key}, "n.ll");
  REQUIRE(fresh);
  CHECK_FALSE(fresh->has_value()); // a new name moves nothing
  CHECK(c.store->names().name_unit("missing", "host").error().code == Code::not_found);

  // A closure gc took is named clearly, and the name stays where it was.
  auto gone = c.store->names().point_name({"a", "host", hash128("no such closure")}, "x.ll");
  REQUIRE_FALSE(gone);
  CHECK(gone.error().code == Code::not_found);
  CHECK(*c.store->names().resolve_name("a", "host") == b.key);

  // put_closure re-pointing a name (an import) forgets the unit; keeping its
  // closure keeps it.
  REQUIRE(c.store->closures().put_closure(b, {{"new", "host", b.key}}));
  CHECK(*c.store->names().name_unit("new", "host") == "n.ll");
  REQUIRE(c.store->closures().put_closure(a, {{"new", "host", a.key}}));
  CHECK(c.store->names().name_unit("new", "host")->empty());
}

TEST_CASE("names: read_root reads name, closure, members and image together") {
  TestCache c = open_cache();
  ClosureRecord a = put_root(*c.store, "a");
  REQUIRE(c.store->images().put_image({a.key, "x86_64-linux", "lld 22"}, "so", "image bytes"));
  auto r = c.store->closures().read_root("a", "host", "x86_64-linux");
  REQUIRE(r);
  CHECK(r->closure.key == a.key);
  REQUIRE(r->closure.members.size() == 1);
  CHECK(r->closure.members[0].entry == "a");
  REQUIRE(r->image.has_value());
  CHECK(*r->image == "image bytes");

  auto no_arch = c.store->closures().read_root("a", "host", "");
  REQUIRE(no_arch);
  CHECK_FALSE(no_arch->image.has_value());
  auto by_key = c.store->closures().read_root(a.key.hex(), "host", "sm_90");
  REQUIRE(by_key);
  CHECK(by_key->closure.key == a.key);
  CHECK_FALSE(by_key->image.has_value());

  CHECK(c.store->closures().read_root("a", "sm_90", "").error().code == Code::not_found);
  CHECK(c.store->closures().read_root("nobody", "host", "").error().code == Code::not_found);
  CHECK(c.store->closures().read_root(hash128("x").hex(), "host", "").error().code ==
        Code::not_found);
}
