// Unit tests for how a cache is used (src/storage/usage.cpp,
// src/storage/local/usage_rows.cpp): counters
// added to and zeroed, recency that only moves forward, what stats counts and
// measures, settings, and the size limit from $KILN_CACHE_MAX_SIZE, else the
// cache's setting, else the default.
#include "storage/usage.h"

#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"

#include <doctest/doctest.h>

#include <ctime>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

JobRecord job(const std::string& entry, const std::string& target) {
  JobRecord j;
  j.key = hash128("usage-test job " + entry + " " + target);
  j.entry = entry;
  j.symbol = "__kiln_deferred_" + hash128("symbol of " + entry + target).hex();
  j.target = target;
  j.options = "-O2";
  j.module_hash = hash128("module of " + entry);
  j.toolchain = "test";
  return j;
}

ClosureRecord closure_for(const JobRecord& j) {
  ClosureRecord c;
  c.key = hash128("usage-test closure " + j.key.hex());
  c.root_job = j.key;
  c.target = j.target;
  c.members = {{j.symbol, j.key, ""}};
  return c;
}

} // namespace

TEST_CASE("usage: counters are added to, survive a reopen, and are zeroed") {
  TestCache c = open_cache();
  CHECK(stats_ok(*c.store).counters.empty());

  Counters a;
  a.job_hits = 3;
  a.job_misses = 1;
  a.loads = 2;
  a.remote_bytes_out = 1000;
  REQUIRE(c.store->upkeep().add_counters(a));
  Counters b;
  b.job_hits = 4;
  b.image_hits = 5;
  b.image_misses = 6;
  b.remote_hits = 7;
  b.remote_misses = 8;
  b.remote_bytes_in = 9;
  b.remote_errors = 10;
  REQUIRE(c.store->upkeep().add_counters(b));
  REQUIRE(c.store->upkeep().add_counters(Counters{}));

  auto check_sum = [](const Counters& got) {
    CHECK(got.job_hits == 7);
    CHECK(got.job_misses == 1);
    CHECK(got.image_hits == 5);
    CHECK(got.image_misses == 6);
    CHECK(got.loads == 2);
    CHECK(got.remote_hits == 7);
    CHECK(got.remote_misses == 8);
    CHECK(got.remote_bytes_in == 9);
    CHECK(got.remote_bytes_out == 1000);
    CHECK(got.remote_errors == 10);
  };
  check_sum(stats_ok(*c.store).counters);
  c.open();
  check_sum(stats_ok(*c.store).counters);

  REQUIRE(c.store->upkeep().zero_counters());
  CHECK(stats_ok(*c.store).counters.empty());
  Counters one;
  one.loads = 1;
  REQUIRE(c.store->upkeep().add_counters(one));
  CHECK(stats_ok(*c.store).counters.loads == 1);
  CHECK(stats_ok(*c.store).counters.job_hits == 0);
}

TEST_CASE("usage: stats counts rows per kind and jobs per target, and measures bytes") {
  TestCache c = open_cache();
  Stats empty = stats_ok(*c.store);
  CHECK(empty.jobs == 0);
  CHECK(empty.stored_bytes == 0);
  CHECK(empty.raw_bytes == 0);
  CHECK(empty.compression_ratio() == 0.0);
  CHECK(empty.jobs_per_target.empty());
  CHECK(empty.file_bytes > 0);

  const std::string text(10000, 'k'); // compresses well
  JobRecord h1 = job("a", "host"), h2 = job("b", "host"), g = job("a", "sm_90");
  REQUIRE(c.store->jobs().put_job(h1, {{"obj", text}}, {}));
  REQUIRE(c.store->jobs().put_job(h2, {{"obj", text}}, {}));
  REQUIRE(c.store->jobs().put_job(g, {{"ptx", text}, {"cubin", "tiny"}}, {}));
  ClosureRecord ca = closure_for(h1), cg = closure_for(g);
  REQUIRE(c.store->closures().put_closure(ca, {{"a", "host", ca.key}}));
  REQUIRE(
      c.store->closures().put_closure(cg, {{"a", "sm_90", cg.key}, {"alias", "sm_90", cg.key}}));
  REQUIRE(c.store->images().put_image({ca.key, "x86_64-linux", "lld 22"}, "so", text));

  Stats st = stats_ok(*c.store);
  CHECK(st.jobs == 3);
  CHECK(st.closures == 2);
  CHECK(st.images == 1);
  CHECK(st.names == 3);
  CHECK(st.jobs_per_target ==
        std::vector<std::pair<std::string, int64_t>>{{"host", 2}, {"sm_90", 1}});
  CHECK(st.raw_bytes == int64_t(4 * text.size() + 4));
  CHECK(st.stored_bytes > 0);
  CHECK(st.stored_bytes < st.raw_bytes);
  CHECK(st.compression_ratio() == doctest::Approx(double(st.stored_bytes) / double(st.raw_bytes)));
  CHECK(st.compression_ratio() < 1.0);
  CHECK(st.live_bytes > 0);
  CHECK(st.live_bytes <= st.file_bytes);
  auto live = c.store->upkeep().live_bytes();
  REQUIRE(live);
  CHECK(*live == st.live_bytes);
}

TEST_CASE("usage: touch_closures marks closures used and only ever moves recency forward") {
  TestCache c = open_cache();
  JobRecord a = job("a", "host"), b = job("b", "host");
  REQUIRE(c.store->jobs().put_job(a, {{"obj", "a"}}, {}));
  REQUIRE(c.store->jobs().put_job(b, {{"obj", "b"}}, {}));
  ClosureRecord ca = closure_for(a), cb = closure_for(b);
  REQUIRE(c.store->closures().put_closure(ca, {}));
  REQUIRE(c.store->closures().put_closure(cb, {}));
  REQUIRE(c.store->upkeep().touch_closures({}, 0));

  // Recency is what gc reads: its order shows which was used last.
  auto order = [&] {
    GcPolicy all;
    all.max_size = 0;
    all.dry_run = true;
    auto rep = c.store->upkeep().gc(all);
    REQUIRE(rep);
    return rep->evicted_closures;
  };
  int64_t t = int64_t(std::time(nullptr));
  REQUIRE(c.store->upkeep().touch_closures({ca.key}, t + 100));
  CHECK(order() == std::vector<Hash128>{cb.key, ca.key});
  REQUIRE(c.store->upkeep().touch_closures({cb.key}, t + 200));
  CHECK(order() == std::vector<Hash128>{ca.key, cb.key});
  // Touching with an earlier time does not make b older than a again.
  REQUIRE(c.store->upkeep().touch_closures({cb.key}, t + 50));
  CHECK(order() == std::vector<Hash128>{ca.key, cb.key});
  // A batch, and a key that is not stored, are fine.
  REQUIRE(c.store->upkeep().touch_closures({ca.key, hash128("no closure")}, t + 300));
  CHECK(order() == std::vector<Hash128>{cb.key, ca.key});
}

TEST_CASE("usage: settings are not_found until set, then hold the last value set") {
  TestCache c = open_cache();
  auto unset = c.store->upkeep().setting("max_size");
  REQUIRE_FALSE(unset);
  CHECK(unset.error().code == Code::not_found);
  REQUIRE(c.store->upkeep().set_setting("max_size", "1048576"));
  auto one = c.store->upkeep().setting("max_size");
  REQUIRE(one);
  CHECK(*one == "1048576");
  REQUIRE(c.store->upkeep().set_setting("max_size", "2048"));
  CHECK(*c.store->upkeep().setting("max_size") == "2048");
  // Each setting by its own name.
  REQUIRE(c.store->upkeep().set_setting("other", "x"));
  CHECK(*c.store->upkeep().setting("max_size") == "2048");
  CHECK(*c.store->upkeep().setting("other") == "x");
}

TEST_CASE("usage: parse_setting stores a size as bytes and refuses unknown names") {
  auto mb = parse_setting("max_size", "1M");
  REQUIRE(mb);
  CHECK(*mb == "1048576");
  auto g = parse_setting("max_size", "2G");
  REQUIRE(g);
  CHECK(*g == "2147483648");
  auto name_only = parse_setting("max_size", "");
  REQUIRE(name_only);
  CHECK(name_only->empty());
  auto bad = parse_setting("max_size", "big");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == Code::invalid_argument);
  auto unknown = parse_setting("colour", "blue");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == Code::invalid_argument);
  CHECK(unknown.error().message.find("'colour'") != std::string::npos);
}

TEST_CASE("usage: the size limit is $KILN_CACHE_MAX_SIZE, else the setting, else the default") {
  TestCache c = open_cache();
  {
    EnvVar unset("KILN_CACHE_MAX_SIZE", nullptr);
    auto def = size_limit(*c.store);
    REQUIRE(def);
    CHECK(def->bytes == kDefaultMaxSize);
    CHECK(def->source == "default");
    CHECK(*c.store->upkeep().max_size() == kDefaultMaxSize);

    REQUIRE(c.store->upkeep().set_setting("max_size", "1048576"));
    auto set = size_limit(*c.store);
    REQUIRE(set);
    CHECK(set->bytes == 1048576);
    CHECK(set->source == "cache setting");
  }
  {
    EnvVar env("KILN_CACHE_MAX_SIZE", "2M");
    auto from_env = size_limit(*c.store);
    REQUIRE(from_env);
    CHECK(from_env->bytes == 2 * 1048576);
    CHECK(from_env->source == "KILN_CACHE_MAX_SIZE");
    CHECK(*c.store->upkeep().max_size() == 2 * 1048576);
  }
  {
    // Empty is unset.
    EnvVar empty("KILN_CACHE_MAX_SIZE", "");
    auto set = size_limit(*c.store);
    REQUIRE(set);
    CHECK(set->bytes == 1048576);
    CHECK(set->source == "cache setting");
  }
  {
    EnvVar bad("KILN_CACHE_MAX_SIZE", "roomy");
    auto refused = size_limit(*c.store);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Code::invalid_argument);
    CHECK(refused.error().message.find("KILN_CACHE_MAX_SIZE") != std::string::npos);
  }
  {
    EnvVar unset("KILN_CACHE_MAX_SIZE", nullptr);
    REQUIRE(c.store->upkeep().set_setting("max_size", "plenty"));
    auto refused = c.store->upkeep().max_size();
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Code::invalid_argument);
  }
}

TEST_CASE("usage: stats_report reads the counters and the limit, zeroing them first if asked") {
  TestCache c = open_cache();
  EnvVar unset("KILN_CACHE_MAX_SIZE", nullptr);
  REQUIRE(c.store->upkeep().set_setting("max_size", "4096"));
  JobRecord a = job("a", "host");
  REQUIRE(c.store->jobs().put_job(a, {{"obj", "a"}}, {}));
  Counters n;
  n.job_misses = 2;
  REQUIRE(c.store->upkeep().add_counters(n));

  auto rep = stats_report(*c.store, false);
  REQUIRE(rep);
  CHECK(rep->max_size == 4096);
  CHECK(rep->stats.jobs == 1);
  CHECK(rep->stats.counters.job_misses == 2);

  auto zeroed = stats_report(*c.store, true);
  REQUIRE(zeroed);
  CHECK(zeroed->stats.counters.empty());
  CHECK(zeroed->stats.jobs == 1); // contents stay
  CHECK(stats_ok(*c.store).counters.empty());
}
