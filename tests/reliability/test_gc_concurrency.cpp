// gc against running writers and readers: a size limit so small that every
// precompile ends in a gc, 16 writers on overlapping and distinct units, and
// readers loading throughout. A gc must never evict a job a running
// precompile stored or found before its closure is recorded (the writer's
// root would fail), nor let a load see a closure without its members (a
// false KILN_CORRUPT).
#include "common.hpp"

#include <doctest/doctest.h>

#include <fstream>

using namespace kiln_rel;

namespace {

fs::path gc_probe_bin() { return fs::path(KILN_REL_GC_PROBE); }

// Writer i's unit: two neighbouring fixtures (overlapping other writers'
// units) for even i, one fixture alone (a distinct unit sharing jobs with
// the pairs) for odd i.
std::vector<std::string> unit_of(int i) {
  const auto& files = fixture_files();
  size_t n = files.size();
  std::vector<std::string> args = {kiln_it::data(files[size_t(i) % n])};
  if (i % 2 == 0)
    args.push_back(kiln_it::data(files[size_t(i + 1) % n]));
  return args;
}

struct Figures {
  int precompiles = 0;
  int gc_runs = 0; ///< precompiles whose gc evicted closures
  int memo_hits = 0;
  long loads = 0, ok = 0, missed = 0;
};

// 16 writers, each precompiling its unit `rounds` times in a row, while
// `readers` probes load every fixture root until the writers are done.
Figures run_trial(int rounds, int readers) {
  Cache cache;
  Figures fig;
  const std::vector<std::string> env = {"KILN_CACHE_MAX_SIZE=1"};
  fs::path stop = cache.db().parent_path() / "stop";
  std::vector<std::string> probe_args = {gc_probe_bin().string(), cache.db().string(),
                                         stop.string()};
  for (const Root& r : fixture_roots())
    probe_args.push_back(r.name + "=" + std::to_string(r.expect));
  std::vector<std::unique_ptr<Child>> probes;
  for (int i = 0; i < readers; ++i)
    probes.push_back(std::make_unique<Child>(probe_args, env));
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::unique_ptr<Child>> writers;
    for (int i = 0; i < 16; ++i) {
      std::vector<std::string> argv = {precompile_bin().string(), "--cache", cache.db().string(),
                                       "--json", "-j", std::to_string(1 + i % 2)};
      for (const std::string& a : unit_of(i))
        argv.push_back(a);
      writers.push_back(std::make_unique<Child>(argv, env));
    }
    for (int i = 0; i < 16; ++i) {
      RunResult r = writers[size_t(i)]->wait();
      INFO("round " << round << ", writer " << i << ": " << describe(r));
      REQUIRE(r.exit_code == 0);
      json j = json::parse(r.out, nullptr, false);
      REQUIRE(!j.is_discarded());
      for (const json& root : j["roots"]) {
        INFO(root.dump());
        CHECK_FALSE(root.contains("error"));
        CHECK(root["closure"].get<std::string>().size() == 32);
      }
      ++fig.precompiles;
      fig.gc_runs += j.value("evicted_closures", 0) > 0;
      fig.memo_hits += j.value("memo", false);
    }
  }
  std::ofstream(stop).put('\n');
  for (auto& p : probes) {
    RunResult r = p->wait();
    INFO("reader: " << describe(r));
    CHECK(r.exit_code == 0);
    long loads = 0, ok = 0, missed = 0, failed = 0;
    REQUIRE(std::sscanf(r.out.c_str(), "loads=%ld ok=%ld missed=%ld failed=%ld", &loads, &ok,
                        &missed, &failed) == 4);
    CHECK(failed == 0);
    fig.loads += loads;
    fig.ok += ok;
    fig.missed += missed;
  }
  require_verify_clean(cache.db(), "after writers, readers and gc");
  // What gc left is whole: every root still named loads.
  for (const Root& r : fixture_roots()) {
    RunResult p = probe(cache.db(), r.name);
    INFO(describe(p));
    if (p.exit_code != 0)
      CHECK(p.err.find("KILN_CORRUPT") == std::string::npos);
  }
  return fig;
}

} // namespace

TEST_SUITE("reliability.gc") {

TEST_CASE("gc after every precompile breaks neither 16 writers nor readers loading") {
  (void)template_cache(); // reference results, computed serially
  int rounds = scaled(10, 60);
  auto t0 = std::chrono::steady_clock::now();
  Figures f = run_trial(rounds, 2);
  CHECK(f.precompiles == 16 * rounds);
  CHECK(f.gc_runs > 0);
  CHECK(f.loads > 0);
  figure("gc concurrency: 16 writers x " + std::to_string(rounds) + " rounds, " +
         std::to_string(f.gc_runs) + " gc runs that evicted (" + std::to_string(f.memo_hits) +
         " precompiles answered by their memo), 2 readers: " + std::to_string(f.loads) +
         " loads (" + std::to_string(f.ok) + " ok, " + std::to_string(f.missed) +
         " missed), 0 failed, verify clean (" + std::to_string(int(ms_since(t0))) + " ms)");
}

} // TEST_SUITE
