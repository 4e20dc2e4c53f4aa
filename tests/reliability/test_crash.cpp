// Crashes: kill -9 a precompile, an import and a gc at random moments. The
// cache must always open, verify clean and hold only whole jobs (and whole
// closures), and running the command again must complete the work.
#include "common.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

using namespace kiln_rel;

namespace {

std::vector<std::string> all_fixtures() {
  std::vector<std::string> out;
  for (const std::string& f : fixture_files())
    out.push_back(kiln_it::data(f));
  return out;
}

std::vector<std::string> cli(const char* tool, const fs::path& db,
                             const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      (std::string(tool) == "precompile" ? precompile_bin() : inspect_bin()).string(), "--cache",
      db.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Runs argv, kills it after a random delay in [0, typical_ms], and says
// whether the kill landed before it finished (else it must have succeeded).
// The window adapts: a run that finished first shrinks it, so that the
// kills keep landing mid-run however fast the machine is.
bool run_and_kill(const std::vector<std::string>& argv, double& typical_ms) {
  std::uniform_real_distribution<double> when(0, typical_ms);
  double delay = when(rng());
  Child c(argv);
  std::this_thread::sleep_for(std::chrono::microseconds(int64_t(delay * 1000)));
  c.kill9();
  RunResult r = c.wait();
  INFO("killed after " << delay << " ms: " << describe(r));
  REQUIRE((r.exit_code == 128 + 9 || r.exit_code == 0));
  bool killed = r.exit_code == 128 + 9;
  typical_ms = killed ? typical_ms * 1.05 : std::max(1.0, delay * 0.9);
  return killed;
}

double time_ms(const std::vector<std::string>& argv) {
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = run(argv);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  return ms_since(t0);
}

size_t job_count(const fs::path& db) {
  RunResult r = run(cli("inspect", db, {"ls", "--json"}));
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out)["jobs"].size();
}

} // namespace

TEST_SUITE("reliability.crash") {

TEST_CASE("kill -9 of a precompile at random moments: whole jobs only, a rerun completes") {
  (void)template_cache();
  std::vector<std::string> args = all_fixtures();
  args.insert(args.end(), {"-j", "2"});
  double typical;
  {
    Cache c;
    typical = time_ms(cli("precompile", c.db(), args));
  }
  // Half the trials start from a cache that already holds one fixture.
  Cache seeded;
  precompile_ok(seeded, {kiln_it::data("diamond.ll")});
  int trials = scaled(6, 200), killed = 0;
  for (int t = 0; t < trials; ++t) {
    CAPTURE(t);
    Cache cache;
    if (t % 2)
      copy_cache(seeded.db(), cache.db());
    killed += run_and_kill(cli("precompile", cache.db(), args), typical);
    if (fs::exists(cache.db())) // a kill before the cache was created leaves none
      require_verify_clean(cache.db(), "after a killed precompile");
    json j = precompile_ok(cache, args);
    require_verify_clean(cache.db(), "after the rerun");
    CHECK(job_count(cache.db()) == keys(j).size());
    require_all_roots_load(cache.db(), "after the rerun");
  }
  figure("crash: precompile killed -9 " + std::to_string(killed) + " times mid-run (" +
         std::to_string(trials) + " trials, typical run " + std::to_string(int(typical)) +
         " ms): verify clean every time, every rerun completed");
  CHECK(killed > 0);
}

TEST_CASE("kill -9 of an import at random moments: all or nothing, a rerun completes") {
  TempDir dir;
  fs::path bundle = dir.path() / "all.kiln";
  {
    RunResult r = run(cli("inspect", template_cache(), {"export", bundle.string()}));
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
  }
  size_t full = job_count(template_cache());
  double typical;
  {
    Cache c;
    typical = time_ms(cli("inspect", c.db(), {"import", bundle.string()}));
  }
  int trials = scaled(4, 100), killed = 0;
  for (int t = 0; t < trials; ++t) {
    CAPTURE(t);
    Cache cache;
    killed += run_and_kill(cli("inspect", cache.db(), {"import", bundle.string()}), typical);
    size_t n = 0;
    if (fs::exists(cache.db())) { // a kill before the cache was created leaves none
      require_verify_clean(cache.db(), "after a killed import");
      n = job_count(cache.db());
    }
    CHECK((n == 0 || n == full)); // one transaction
    RunResult r = run(cli("inspect", cache.db(), {"import", bundle.string()}));
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    CHECK(job_count(cache.db()) == full);
    require_all_roots_load(cache.db(), "after the import's rerun");
  }
  figure("crash: import killed -9 " + std::to_string(killed) + " times mid-run (" +
         std::to_string(trials) + " trials): all or nothing every time, every rerun completed");
  CHECK(killed > 0);
}

TEST_CASE("kill -9 of a gc at random moments: what remains loads, a rerun completes") {
  double typical;
  {
    Cache c;
    copy_cache(template_cache(), c.db());
    typical = time_ms(cli("inspect", c.db(), {"gc", "--max-size", "0"}));
  }
  int trials = scaled(4, 100), killed = 0;
  for (int t = 0; t < trials; ++t) {
    CAPTURE(t);
    Cache cache;
    copy_cache(template_cache(), cache.db());
    killed += run_and_kill(cli("inspect", cache.db(), {"gc", "--max-size", "0"}), typical);
    require_verify_clean(cache.db(), "after a killed gc");
    // Every name still present loads, with the right value.
    RunResult ls = run(cli("inspect", cache.db(), {"ls", "--json"}));
    REQUIRE(ls.exit_code == 0);
    size_t jobs = json::parse(ls.out)["jobs"].size();
    if (jobs > 0)
      require_all_roots_load(cache.db(), "after a gc killed before it committed");
    RunResult r = run(cli("inspect", cache.db(), {"gc", "--max-size", "0"}));
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    require_verify_clean(cache.db(), "after the gc's rerun");
    CHECK(job_count(cache.db()) == 0);
  }
  figure("crash: gc killed -9 " + std::to_string(killed) + " times mid-run (" +
         std::to_string(trials) + " trials): verify clean every time, every rerun completed");
  CHECK(killed > 0);
}

} // TEST_SUITE
