// Concurrent writers and readers on one cache: many processes precompiling
// overlapping units (the same roots, shared children) at once, and loads
// running while they write.
#include "common.hpp"

#include <doctest/doctest.h>

#include <kiln/kiln.h>

#include <set>

using namespace kiln_rel;

namespace {

// Writer i compiles two neighbouring fixtures as one unit with -j 1..4: each
// fixture's roots (and their shared children) are compiled by several
// writers at the same moment.
std::vector<std::string> writer_args(int i, bool skip_diamond = false) {
  const auto& files = fixture_files();
  size_t n = files.size();
  std::vector<std::string> args;
  for (size_t k : {size_t(i) % n, size_t(i + 1) % n})
    if (!(skip_diamond && files[k] == "diamond.ll"))
      args.push_back(kiln_it::data(files[k]));
  if (args.empty())
    args.push_back(kiln_it::data("chain8.ll"));
  args.push_back("-j");
  args.push_back(std::to_string(1 + i % 4));
  return args;
}

struct RoundResult {
  size_t jobs = 0;
  int loads = 0;
};

// One round: `writers` processes at once into a fresh cache, optionally with
// a reader loading a root stored beforehand until they are all done.
RoundResult round(int writers, bool readers, const std::vector<std::string>& env) {
  Cache cache;
  RoundResult res;
  if (readers) {
    // Stored first, in the same environment (and so journal mode) as the rest.
    RunResult seed = run_env({precompile_bin().string(), "--cache", cache.db().string(),
                              kiln_it::data("diamond.ll")},
                             env);
    INFO(describe(seed));
    REQUIRE(seed.exit_code == 0);
  }
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 0; i < writers; ++i) {
    std::vector<std::string> argv = {precompile_bin().string(), "--cache", cache.db().string(),
                                     "--json"};
    for (const std::string& a : writer_args(i, readers))
      argv.push_back(a);
    children.push_back(std::make_unique<Child>(argv, env));
  }
  if (readers) {
    // Loads while the writers write: each must succeed, with the right value.
    int expect = 0;
    for (const Root& r : fixture_roots())
      if (r.name == "dia_root")
        expect = r.expect;
    auto running = [&] {
      for (auto& c : children)
        if (!c->poll())
          return true;
      return false;
    };
    do {
      RunResult p = probe(cache.db(), "dia_root", 5, env);
      INFO("a load during the writes: " << describe(p));
      REQUIRE(p.exit_code == 0);
      REQUIRE(p.out.find("result=" + std::to_string(expect) + " ") == 0);
      ++res.loads;
    } while (running());
  }
  std::set<std::string> all_keys;
  for (int i = 0; i < writers; ++i) {
    RunResult r = children[size_t(i)]->wait();
    INFO("writer " << i << ": " << describe(r));
    REQUIRE(r.exit_code == 0);
    json j = json::parse(r.out, nullptr, false);
    REQUIRE(!j.is_discarded());
    for (const std::string& k : keys(j))
      all_keys.insert(k);
  }
  // Every job any writer reported is stored, once; nothing else is.
  RunResult ls = run_env({inspect_bin().string(), "--cache", cache.db().string(), "ls", "--json"},
                         env);
  INFO(describe(ls));
  REQUIRE(ls.exit_code == 0);
  json l = json::parse(ls.out);
  std::multiset<std::string> stored;
  for (const json& jb : l["jobs"])
    stored.insert(jb["key"].get<std::string>());
  if (readers)
    for (const std::string& k : keys(precompile_ok(cache, {kiln_it::data("diamond.ll")})))
      all_keys.insert(k);
  CHECK(stored.size() == all_keys.size());
  CHECK(std::set<std::string>(stored.begin(), stored.end()) == all_keys);
  require_verify_clean(cache.db(), "after concurrent writers");
  require_all_roots_load(cache.db(), "after concurrent writers");
  res.jobs = stored.size();
  return res;
}

} // namespace

TEST_SUITE("reliability.concurrency") {

TEST_CASE("16 writers precompiling overlapping units into one cache") {
  (void)template_cache(); // reference results, computed serially
  int rounds = scaled(1, 10);
  size_t jobs = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r)
    jobs = round(16, false, {}).jobs;
  figure("concurrency: " + std::to_string(rounds) + " rounds x 16 writers, " +
         std::to_string(jobs) + " distinct jobs per cache, all exit 0, verify clean, every root "
         "loads (" + std::to_string(int(ms_since(t0))) + " ms)");
}

TEST_CASE("loads succeed while 16 writers write") {
  (void)template_cache();
  int rounds = scaled(1, 5);
  int loads = 0;
  for (int r = 0; r < rounds; ++r)
    loads += round(16, true, {}).loads;
  CHECK(loads > 0);
  figure("concurrency: " + std::to_string(loads) + " loads during " + std::to_string(rounds) +
         " rounds of 16 writers, all correct");
}

TEST_CASE("8 writers and a reader on a network file system (rollback journal)") {
  (void)template_cache();
  RoundResult r = round(8, true, {"KILN_NETWORK_FS=nfs"});
  CHECK(r.loads > 0);
}

TEST_CASE("published host images: loads in fresh processes while writers re-point a name "
          "see one version or the other, never an error, and the last one after") {
  // chg_parent(5) is 12 in change_v1.ll and 210 in change_v2.ll. Writers
  // alternate them (each commit removes the published images, each close
  // publishes them again); fresh processes load the name meanwhile, from
  // the published images or from the file, whichever is there.
  Cache cache;
  precompile_ok(cache, {kiln_it::data("change_v1.ll")});
  int rounds = scaled(6, 40);
  int loads = 0, from_published = 0;
  for (int i = 0; i < rounds; ++i) {
    std::string file = i % 2 == 0 ? "change_v2.ll" : "change_v1.ll";
    Child writer({precompile_bin().string(), "--cache", cache.db().string(),
                  kiln_it::data(file)});
    do {
      RunResult p = probe(cache.db(), "chg_parent", 5);
      INFO("a load during the writes: " << describe(p));
      REQUIRE(p.exit_code == 0);
      bool v1 = p.out.rfind("result=12 ", 0) == 0, v2 = p.out.rfind("result=210 ", 0) == 0;
      REQUIRE((v1 || v2));
      from_published += p.out.find("sqlite=0") != std::string::npos;
      ++loads;
    } while (!writer.poll());
    RunResult w = writer.wait();
    INFO(describe(w));
    REQUIRE(w.exit_code == 0);
    // The writer has closed: every load now gives its version, and reads
    // the images it published without SQLite.
    RunResult after = probe(cache.db(), "chg_parent", 5);
    INFO(describe(after));
    CHECK(after.out.rfind(i % 2 == 0 ? "result=210 " : "result=12 ", 0) == 0);
    CHECK(after.out.find("sqlite=0") != std::string::npos);
  }
  figure("published images under writers: " + std::to_string(loads) + " loads, " +
         std::to_string(from_published) + " of them from the published images");
  require_verify_clean(cache.db(), "after the writers");
}

TEST_CASE("a second handle on a cache in one process keeps the first one's locks") {
  // Closing any descriptor of a file drops all of the process's POSIX locks
  // on it, SQLite's included: a second open must not open and close the
  // file behind the first connection's back. If it did, another process
  // closing the cache would see itself as the last user and delete the WAL
  // that this process still uses.
  Cache cache;
  precompile_ok(cache, {kiln_it::data("nested.ll")});
  // Without its published host images, each handle's load opens the file.
  REQUIRE(fs::remove(cache.db().string() + "-images"));
  kiln_cache *a = nullptr, *b = nullptr;
  kiln_image* image = nullptr;
  REQUIRE(kiln_cache_open(cache.db().c_str(), &a) == KILN_OK);
  REQUIRE(kiln_image_load(a, "nest_a", "host", &image) == KILN_OK);
  REQUIRE(fs::exists(cache.db().string() + "-wal"));
  REQUIRE(kiln_cache_open(cache.db().c_str(), &b) == KILN_OK);
  RunResult v = run({inspect_bin().string(), "--cache", cache.db().string(), "verify"});
  INFO(describe(v));
  CHECK(v.exit_code == 0);
  CHECK(fs::exists(cache.db().string() + "-wal")); // the other process was not the last user
  kiln_image_release(image);
  kiln_cache_close(b);
  kiln_cache_close(a);
  require_verify_clean(cache.db(), "after both handles closed");
}

} // TEST_SUITE
