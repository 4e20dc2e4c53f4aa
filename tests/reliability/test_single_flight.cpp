// Single-flight across processes (src/storage/single_flight.h), through the
// real CLI: processes started together on one cold unit compile each job
// about once between them (the same request, or other requests over the
// same jobs) (on a local disk and in rollback-journal mode, as
// on a network file system); a holder that stops (SIGSTOP) loses its claims
// within the lease term and one that is killed (SIGKILL) at once, and its
// waiter, which said whom it waited for, finishes the unit; two caches on one
// redis-server compile each job about once between them; and a redis-server
// that is down leaves each process to its own machine, with one notice.
#include "common.hpp"

#include "../unit/fixtures/redis.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <set>
#include <thread>

using namespace kiln_rel;

namespace {

// A host unit of `n` exported functions, each a job and a root, each with
// enough arithmetic that its compile is not free.
fs::path fleet_unit(const fs::path& dir, int n, const std::string& salt = "sf") {
  fs::path p = dir / (salt + "_unit.ll");
  std::ofstream f(p);
  for (int i = 0; i < n; ++i) {
    f << "define i64 @" << salt << "_fn_" << i << "(i64 %x) {\n";
    f << "entry:\n  br label %loop\nloop:\n";
    f << "  %i = phi i64 [ 0, %entry ], [ %next, %loop ]\n";
    f << "  %acc = phi i64 [ %x, %entry ], [ %v9, %loop ]\n";
    std::string prev = "%acc";
    for (int k = 0; k < 10; ++k) {
      std::string v = "%v" + std::to_string(k);
      f << "  " << v << " = " << (k % 3 == 0 ? "mul" : k % 3 == 1 ? "add" : "xor") << " i64 "
        << prev << ", " << (i * 31 + k * 7 + 3) << "\n";
      prev = v;
    }
    f << "  %next = add i64 %i, 1\n  %done = icmp eq i64 %next, " << (i % 7 + 3)
      << "\n  br i1 %done, label %out, label %loop\nout:\n  ret i64 %v9\n}\n\n";
  }
  return p;
}

struct FleetResult {
  size_t compiled = 0; ///< summed over the processes
  size_t jobs = 0;     ///< in the unit
  size_t memo_hits = 0; ///< processes answered by another's request memo
  std::vector<RunResult> runs;
};

// `procs` processes at once on `unit`, process p into caches[p % caches.size()].
// With `copies`, each process reads its own copy of the unit (another file
// name: another request, the same jobs), so that they share jobs, not a
// request memo.
FleetResult fleet(const std::vector<const Cache*>& caches, const fs::path& unit, int procs,
                  const std::vector<std::string>& env, bool copies = true) {
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 0; i < procs; ++i) {
    fs::path mine = unit;
    if (copies) {
      mine = unit.parent_path() / (std::to_string(i) + "_" + unit.filename().string());
      fs::copy_file(unit, mine, fs::copy_options::overwrite_existing);
    }
    children.push_back(std::make_unique<Child>(
        std::vector<std::string>{precompile_bin().string(), "--cache",
                                 caches[size_t(i) % caches.size()]->db().string(), "--json",
                                 "-j", "2", mine.string()},
        env));
  }
  FleetResult res;
  std::set<std::string> keys_seen;
  for (auto& c : children) {
    RunResult r = c->wait();
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    json j = json::parse(r.out);
    for (const json& job : j["jobs"]) {
      res.compiled += job["status"] == "compiled";
      keys_seen.insert(job["key"].get<std::string>());
    }
    res.jobs = j["jobs"].size();
    res.memo_hits += j["memo"] == true;
    res.runs.push_back(std::move(r));
  }
  CHECK(keys_seen.size() == res.jobs); // every process planned the same jobs
  for (const Cache* c : caches) {
    require_verify_clean(c->db(), "after the fleet");
    json ls = json::parse(run({inspect_bin().string(), "--cache", c->db().string(), "ls", "--json"})
                              .out);
    CHECK(ls["jobs"].size() >= res.jobs); // every job of the unit (and any stored before)
  }
  return res;
}

// Waits until some process holds claims on the cache (the table exists and
// has rows), for at most `seconds`.
bool claims_appear(const Cache& cache, double seconds) {
  auto t0 = std::chrono::steady_clock::now();
  while (ms_since(t0) < seconds * 1000) {
    if (fs::exists(cache.db())) {
      try {
        Db db(cache.db());
        auto rows = db.rows("SELECT count(*) FROM sqlite_schema WHERE name = 'claims'");
        if (!rows.empty() && rows[0][0] == "1" &&
            db.rows("SELECT count(*) FROM claims")[0][0] != "0")
          return true;
      } catch (...) {
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

} // namespace

TEST_SUITE("reliability.single_flight") {

TEST_CASE("four processes on one cold unit compile each job about once between them") {
  TempDir dir;
  fs::path unit = fleet_unit(dir.path(), 120);
  Cache cache;
  FleetResult r = fleet({&cache}, unit, 4, {});
  figure("single-flight, 4 processes, 120 jobs: " + std::to_string(r.compiled) + " compiled");
  CHECK(r.jobs == 120);
  // Without single-flight each process compiles nearly every job (4x).
  CHECK(r.compiled >= r.jobs);
  CHECK(r.compiled <= r.jobs + r.jobs / 5);
}

TEST_CASE("the same request from four processes into a cache that exists: each job compiled "
          "about once") {
  TempDir dir;
  fs::path unit = fleet_unit(dir.path(), 60, "same");
  Cache cache;
  precompile_ok(cache, {kiln_it::data("diamond.ll")});
  FleetResult r = fleet({&cache}, unit, 4, {}, false);
  figure("single-flight on one request, 4 processes, 60 jobs: " + std::to_string(r.compiled) +
         " compiled, " + std::to_string(r.memo_hits) + " answered by the memo");
  CHECK(r.compiled >= r.jobs);
  CHECK(r.compiled <= r.jobs + r.jobs / 5);
}

TEST_CASE("on a network file system (rollback journal) too") {
  TempDir dir;
  fs::path unit = fleet_unit(dir.path(), 80, "nfs");
  Cache cache;
  FleetResult r = fleet({&cache}, unit, 3, {"KILN_NETWORK_FS=nfs"});
  CHECK(r.compiled >= r.jobs);
  CHECK(r.compiled <= r.jobs + r.jobs / 5);
}

TEST_CASE("a stopped holder loses its claims within the lease term, a killed one at once; the "
          "waiter says whom it waits for and finishes the unit") {
  TempDir dir;
  fs::path unit = fleet_unit(dir.path(), 60, "take");
  for (bool killed : {false, true}) {
    CAPTURE(killed);
    Cache cache;
    // Killed: a lease far longer than the test, so only seeing the holder
    // gone can free its claims.
    const std::string lease = killed ? "KILN_CLAIM_LEASE_MS=60000" : "KILN_CLAIM_LEASE_MS=1500";
    Child holder({precompile_bin().string(), "--cache", cache.db().string(), "-j", "1",
                  unit.string()},
                 {lease});
    REQUIRE(claims_appear(cache, 30));
    ::kill(holder.pid(), SIGSTOP); // hung: it holds its claims and does nothing
    Child waiter({precompile_bin().string(), "--cache", cache.db().string(), "--json", "-j", "2",
                  unit.string()},
                 {lease});
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    auto t0 = std::chrono::steady_clock::now();
    if (killed)
      holder.kill9();
    RunResult w = waiter.wait();
    double after = ms_since(t0);
    INFO(describe(w));
    REQUIRE(w.exit_code == 0);
    CHECK(w.err.find("waiting for pid " + std::to_string(holder.pid())) != std::string::npos);
    json j = json::parse(w.out);
    size_t compiled = 0;
    for (const json& job : j["jobs"])
      compiled += job["status"] == "compiled";
    CHECK(compiled > 0); // it took the held jobs over
    CHECK(after < 30000);
    figure(std::string("single-flight takeover of a ") + (killed ? "killed" : "stopped") +
           " holder: the waiter finished " + std::to_string(int(after)) + " ms later");
    if (!killed)
      holder.kill9();
    (void)holder.wait();
    require_verify_clean(cache.db(), "after the takeover");
    json ls = json::parse(
        run({inspect_bin().string(), "--cache", cache.db().string(), "ls", "--json"}).out);
    CHECK(ls["jobs"].size() == 60);
  }
}

TEST_CASE("two caches on one redis-server compile each job about once between them; a server "
          "that is down leaves each process to its machine with one notice") {
  kiln::test::RedisServer redis;
  if (!redis.running()) {
    MESSAGE("skipped: no redis-server installed");
    return;
  }
  TempDir dir;
  fs::path unit = fleet_unit(dir.path(), 100, "redis");
  Cache a, b;
  FleetResult r = fleet({&a, &b}, unit, 4, {"KILN_REMOTE=" + redis.url()});
  figure("single-flight, 2 caches x 2 processes on one Redis, 100 jobs: " +
         std::to_string(r.compiled) + " compiled");
  CHECK(r.compiled >= r.jobs);
  CHECK(r.compiled <= r.jobs + r.jobs / 5);

  const std::string url = redis.url("?timeout_ms=300");
  redis.stop();
  Cache c, d;
  FleetResult down = fleet({&c, &d}, unit, 2, {"KILN_REMOTE=" + url});
  for (const RunResult& run : down.runs) {
    size_t notices = 0;
    for (size_t at = 0; (at = run.err.find("kiln: remote cache", at)) != std::string::npos; ++at)
      ++notices;
    CHECK_MESSAGE(notices == 1, run.err);
  }
}

} // TEST_SUITE
