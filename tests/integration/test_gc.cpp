// Eviction and the size limit through kiln-inspect: gc by size (least
// recently used first, the most recent still loadable) and by age (shared
// jobs stay), dry runs that change nothing, malformed sizes and durations
// refused with exit 2; gc and verify on a cache that filled its disk; the max_size setting (config, stats, the environment
// overriding it) and the automatic limit each precompile enforces.
#include "inspect_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

using namespace kiln_it;

namespace {

/// Checks the shape of a gc --json answer and returns its evicted closures.
std::vector<std::string> check_gc(const json& g, bool dry_run) {
  INFO("gc: " << g.dump());
  REQUIRE(g.contains("dry_run"));
  CHECK(g["dry_run"].is_boolean());
  CHECK(g["dry_run"] == dry_run);
  REQUIRE(g.contains("evicted_closures"));
  REQUIRE(g["evicted_closures"].is_array());
  std::vector<std::string> out;
  for (const json& c : g["evicted_closures"]) {
    CHECK(is_hex32(c));
    if (c.is_string())
      out.push_back(c.get<std::string>());
  }
  CHECK(num(g, "evicted_jobs") >= 0);
  CHECK(num(g, "evicted_images") >= 0);
  CHECK(num(g, "bytes_before") >= 0);
  CHECK(num(g, "bytes_after") >= 0);
  return out;
}

void sleep_past_second() { std::this_thread::sleep_for(std::chrono::milliseconds(1100)); }

} // namespace

TEST_SUITE("integration.gc") {

TEST_CASE("a cache that filled its disk (a 1 MiB file system) is shrunk by gc and verified, "
          "from the reserve a new cache keeps") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: not running as root (CI runs as root): cannot mount a small file system");
    return;
  }
  Cache cache; // the mount point
  if (::mount("kiln-full", cache.dir().c_str(), "tmpfs", 0, "size=1m,mode=0700") != 0) {
    MESSAGE("skipped: cannot mount a 1 MiB tmpfs here: " << std::strerror(errno));
    return;
  }
  struct Unmount {
    fs::path at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{cache.dir()};
  for (const char* unit : {"nested.ll", "cycle.ll", "diamond.ll", "chain8.ll"})
    precompile_ok(cache, {data(unit)});
  REQUIRE(fs::exists(cache.db().string() + "-reserve"));
  CHECK(fs::file_size(cache.db().string() + "-reserve") == 128 * 1024);
  // Everything else the disk holds: a file written until it is full.
  const fs::path filler = cache.dir() / "filler";
  {
    int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    std::string chunk(4096, 'x');
    while (::write(fd, chunk.data(), chunk.size()) > 0) {
    }
    CHECK(errno == ENOSPC);
    ::close(fd);
  }
  RunResult gc = inspect(cache, {"gc", "--max-size", "1K", "--json"});
  REQUIRE_MESSAGE(gc.exit_code == 0, describe(gc));
  CHECK(!check_gc(json::parse(gc.out), false).empty());
  RunResult verify = inspect(cache, {"verify"});
  CHECK_MESSAGE(verify.exit_code == 0, describe(verify));
  // With room again, the cache takes writes, and keeps its reserve.
  fs::remove(filler);
  precompile_ok(cache, {data("nested.ll")});
  CHECK(inspect(cache, {"gc", "--max-size", "100M"}).exit_code == 0);
  CHECK(fs::exists(cache.db().string() + "-reserve"));
}

// ---------------------------------------------------------------- gc

TEST_CASE("gc --max-size evicts least recently used closures; the most recent stays loadable") {
  Cache cache;
  // Recency has 1-second resolution: nest_a, cyc_a, dia_root, chain0 in that
  // order, then a load of nest_a makes it the most recent.
  json nested = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  sleep_past_second();
  json cycle = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  sleep_past_second();
  json diamond = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  sleep_past_second();
  json chain = precompile_ok(cache, {"--entry", "chain0", data("chain8.ll")});
  sleep_past_second();
  CHECK(call(cache, "nest_a", "nest_a", 1) == 333);

  // Least recently used first.
  struct Root {
    std::string name, closure;
    std::size_t jobs;
  };
  const std::vector<Root> lru{{"cyc_a", closure(cycle, "cyc_a"), 3},
                              {"dia_root", closure(diamond, "dia_root"), 4},
                              {"chain0", closure(chain, "chain0"), 8},
                              {"nest_a", closure(nested, "nest_a"), 3}};

  json dry0 = inspect_json(cache, {"gc", "--max-size", "0", "--dry-run", "--json"});
  CHECK(check_gc(dry0, true).size() == lru.size());
  const std::int64_t before = num(dry0, "bytes_before");
  REQUIRE(before > 0);

  // Find a limit that evicts some but not all (asking the dry run).
  std::optional<std::int64_t> limit;
  for (double f : {0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2}) {
    const auto candidate = static_cast<std::int64_t>(double(before) * f);
    json d = inspect_json(cache, {"gc", "--max-size", std::to_string(candidate), "--dry-run",
                                  "--json"});
    const std::vector<std::string> ev = check_gc(d, true);
    const bool keeps_recent =
        std::find(ev.begin(), ev.end(), lru.back().closure) == ev.end();
    if (!ev.empty() && keeps_recent) {
      limit = candidate;
      break;
    }
  }
  REQUIRE_MESSAGE(limit.has_value(),
                  "no --max-size between 20% and 90% of bytes_before=" << before
                                                                       << " evicts some but not all");

  json ls_before = inspect_json(cache, {"ls", "--json"});
  json g = inspect_json(cache, {"gc", "--max-size", std::to_string(*limit), "--json"});
  INFO("gc --max-size " << *limit << ": " << g.dump());
  const std::vector<std::string> evicted = check_gc(g, false);
  REQUIRE(!evicted.empty());
  REQUIRE(evicted.size() < lru.size());
  // The evicted closures are the least recently used ones, oldest first.
  std::set<std::string> evicted_set(evicted.begin(), evicted.end());
  CHECK(evicted_set.size() == evicted.size());
  std::size_t want_jobs = 0;
  for (std::size_t i = 0; i < lru.size(); ++i) {
    const bool gone = evicted_set.count(lru[i].closure) == 1;
    CHECK_MESSAGE(gone == (i < evicted.size()),
                  lru[i].name << (gone ? " evicted" : " kept") << " out of LRU order");
    if (gone)
      want_jobs += lru[i].jobs;
  }
  CHECK(num(g, "evicted_jobs") == static_cast<std::int64_t>(want_jobs));
  CHECK(num(g, "evicted_images") == static_cast<std::int64_t>(evicted.size()));
  CHECK(num(g, "bytes_before") >= num(g, "bytes_after"));
  CHECK(num(g, "bytes_after") <= *limit);

  json ls = inspect_json(cache, {"ls", "--json"});
  INFO("ls after gc: " << ls.dump());
  const std::set<std::string> names = ls_names(ls);
  for (const Root& r : lru)
    CHECK_MESSAGE(names.count(r.name) == (evicted_set.count(r.closure) ? 0u : 1u),
                  "name " << r.name);
  CHECK(ls["jobs"].size() == ls_before["jobs"].size() - want_jobs);
  CHECK(num(stats(cache), "closures") == static_cast<std::int64_t>(lru.size() - evicted.size()));

  CHECK(call(cache, "nest_a", "nest_a", 1) == 333);
  for (const Root& r : lru)
    if (evicted_set.count(r.closure)) {
      std::string why;
      CHECK_MESSAGE(!try_call(cache.db(), r.name, r.name.c_str(), 0, &why).has_value(),
                    "evicted root " << r.name << " still loads");
    }
  json v = inspect_json(cache, {"verify", "--json"});
  CHECK(v["ok"] == true);
}

TEST_CASE("gc --max-size 0 evicts everything; --dry-run changes nothing") {
  Cache cache;
  json n = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  json c = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  json d = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  const std::set<std::string> all{closure(n, "nest_a"), closure(c, "cyc_a"),
                                  closure(d, "dia_root")};

  RunResult ls0 = inspect(cache, {"ls", "--json"});
  REQUIRE(ls0.exit_code == 0);
  json dry = inspect_json(cache, {"gc", "--max-size", "0", "--dry-run", "--json"});
  const std::vector<std::string> dry_ev = check_gc(dry, true);
  CHECK(std::set<std::string>(dry_ev.begin(), dry_ev.end()) == all);
  CHECK(num(dry, "evicted_jobs") == 10);
  RunResult ls1 = inspect(cache, {"ls", "--json"});
  CHECK(ls1.out == ls0.out);
  CHECK(num(stats(cache), "closures") == 3);

  json g = inspect_json(cache, {"gc", "--max-size", "0", "--json"});
  const std::vector<std::string> ev = check_gc(g, false);
  CHECK(std::set<std::string>(ev.begin(), ev.end()) == all);
  CHECK(num(g, "evicted_jobs") == 10);
  CHECK(num(g, "evicted_images") == 3);
  CHECK(num(g, "bytes_after") <= num(g, "bytes_before"));

  json ls = inspect_json(cache, {"ls", "--json"});
  CHECK(ls["jobs"].empty());
  CHECK(ls["names"].empty());
  json s = stats(cache);
  CHECK(num(s, "jobs") == 0);
  CHECK(num(s, "closures") == 0);
  CHECK(num(s, "images") == 0);
  CHECK(num(s, "names") == 0);
  CHECK(inspect_json(cache, {"verify", "--json"})["ok"] == true);
  CHECK(!try_call(cache.db(), "nest_a", "nest_a", 1).has_value());

  // The cache is usable again afterwards.
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  CHECK(call(cache, "nest_a", "nest_a", 1) == 333);
}

TEST_CASE("gc --older-than evicts closures unused for longer; shared jobs stay") {
  Cache cache;
  // Three closures: nest_a {a, b, c}, nest_b {b, c}, nest_c {c}.
  json pre = precompile_ok(cache, {data("nested.ll")});
  REQUIRE(root_names(pre) == std::set<std::string>{"nest_a", "nest_b", "nest_c"});
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  CHECK(call(cache, "nest_b", "nest_b", 1) == 33);
  CHECK(call(cache, "nest_c", "nest_c", 1) == 3);

  for (const char* age : {"7d", "2h", "10m", "30s"}) {
    json dry = inspect_json(cache, {"gc", "--older-than", age, "--dry-run", "--json"});
    INFO("--older-than " << age << ": " << dry.dump());
    CHECK(check_gc(dry, true).empty());
  }

  json g = inspect_json(cache, {"gc", "--older-than", "2s", "--json"});
  INFO("gc --older-than 2s: " << g.dump());
  const std::vector<std::string> ev = check_gc(g, false);
  CHECK(ev == std::vector<std::string>{closure(pre, "nest_a")});
  CHECK(num(g, "evicted_jobs") == 1); // nest_b and nest_c are still members of kept closures
  CHECK(num(g, "evicted_images") == 1);

  json ls = inspect_json(cache, {"ls", "--json"});
  CHECK(ls_names(ls) == std::set<std::string>{"nest_b", "nest_c"});
  CHECK(ls_keys(ls) == std::set<std::string>{key(pre, "nest_b"), key(pre, "nest_c")});
  CHECK(call(cache, "nest_b", "nest_b", 1) == 33);
  CHECK(inspect_json(cache, {"verify", "--json"})["ok"] == true);
}

TEST_CASE("gc and config reject malformed sizes and durations with exit 2") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  RunResult ls0 = inspect(cache, {"ls", "--json"});
  const std::vector<std::vector<std::string>> bad{
      {"gc", "--max-size", "abc", "--json"},   {"gc", "--max-size", "12Q", "--json"},
      {"gc", "--max-size", "-5", "--json"},    {"gc", "--older-than", "5x", "--json"},
      {"gc", "--older-than", "abc", "--json"}, {"config", "max_size", "lots"}};
  for (const auto& args : bad) {
    RunResult r = inspect(cache, args);
    INFO(args[0] << " " << args[1] << " " << args[2] << ": " << describe(r));
    CHECK(r.exit_code == kExitUsage);
    CHECK(!r.err.empty());
  }
  CHECK(inspect(cache, {"ls", "--json"}).out == ls0.out);
  // Accepted forms.
  for (const char* size : {"64K", "10M", "1G", "100000"})
    CHECK(inspect(cache, {"gc", "--max-size", size, "--dry-run", "--json"}).exit_code == 0);
  for (const char* age : {"30s", "10m", "2h", "7d"})
    CHECK(inspect(cache, {"gc", "--older-than", age, "--dry-run", "--json"}).exit_code == 0);
}

// ---------------------------------------------------------------- config / size limit

TEST_CASE("config max_size is stored, reported by stats, and overridden by the environment") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  json c0 = inspect_json(cache, {"config", "--json"});
  INFO("config: " << c0.dump());
  CHECK(num(c0, "max_size") >= 0);

  RunResult set = inspect(cache, {"config", "max_size", "1M"});
  INFO("config max_size 1M: " << describe(set));
  REQUIRE(set.exit_code == 0);
  CHECK(num(inspect_json(cache, {"config", "--json"}), "max_size") == 1048576);
  CHECK(num(stats(cache), "max_size") == 1048576);

  RunResult get = inspect(cache, {"config", "max_size"});
  INFO("config max_size: " << describe(get));
  CHECK(get.exit_code == 0);
  CHECK(!get.out.empty());

  RunResult human = inspect(cache, {"config"});
  INFO("config: " << describe(human));
  CHECK(human.exit_code == 0);
  CHECK(human.out.find("max_size") != std::string::npos);

  REQUIRE(inspect(cache, {"config", "max_size", "64K"}).exit_code == 0);
  CHECK(num(stats(cache), "max_size") == 65536);
  REQUIRE(inspect(cache, {"config", "max_size", "2G"}).exit_code == 0);
  CHECK(num(stats(cache), "max_size") == 2147483648LL);
  REQUIRE(inspect(cache, {"config", "max_size", "1M"}).exit_code == 0);

  // The environment wins for that process only.
  RunResult env = run({"/usr/bin/env", "KILN_CACHE_MAX_SIZE=2097152", inspect_bin().string(),
                       "--cache", cache.db().string(), "stats", "--json"});
  INFO("stats with KILN_CACHE_MAX_SIZE: " << describe(env));
  REQUIRE(env.exit_code == 0);
  json es;
  REQUIRE_NOTHROW(es = json::parse(env.out));
  CHECK(num(es, "max_size") == 2097152);
  CHECK(num(stats(cache), "max_size") == 1048576);

  RunResult unknown = inspect(cache, {"config", "no_such_setting", "1"});
  INFO("config no_such_setting: " << describe(unknown));
  CHECK(unknown.exit_code != 0);
}

TEST_CASE("with max_size set, precompile keeps the cache near the limit; the newest roots load") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")}); // creates the cache
  REQUIRE(inspect(cache, {"config", "max_size", "64K"}).exit_code == 0);
  constexpr std::int64_t kLimit = 64 * 1024;

  const char* const units[] = {"nested.ll",       "cycle.ll",           "diamond.ll",
                               "chain8.ll",       "self_recursive.ll",  "helper.ll",
                               "global_shared.ll", "direct_and_deferred.ll"};
  std::size_t roots_total = 1;
  json last;
  for (const char* opt : {"0", "1", "3"})
    for (const char* unit : units) {
      CAPTURE(opt);
      CAPTURE(unit);
      last = precompile_ok(cache, {"-O", opt, data(unit)});
      roots_total += last["roots"].size();
      json s = stats(cache);
      INFO("stats: " << s.dump());
      CHECK(num(s, "file_bytes") <= 4 * kLimit);
      CHECK(num(s, "max_size") == kLimit);
    }
  json s = stats(cache);
  INFO("final stats: " << s.dump() << ", roots precompiled: " << roots_total);
  CHECK(num(s, "closures") < static_cast<std::int64_t>(roots_total));
  // The last precompile was direct_and_deferred.ll at -O 3: its roots load.
  CHECK(call(cache, "dd_root", "dd_root", 1) == 8017);
  CHECK(call(cache, "dd_f", "dd_f", 1) == 8);
  CHECK(inspect_json(cache, {"verify", "--json"})["ok"] == true);
}

} // TEST_SUITE
