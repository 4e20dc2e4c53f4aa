// Faults: the Nth write to the cache fails (I/O error, disk full, fsync),
// an export's file write fails, the linker library does not load, a link
// fails. Each is a clear error, and nothing half-written stays behind.
#include "common.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

using namespace kiln_rel;

namespace {

std::vector<std::string> precompile_argv(const fs::path& db, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {precompile_bin().string(), "--cache", db.string(), "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

bool says_injected_or_io(const std::string& err) {
  for (const char* w : {"injected fault", "disk I/O error", "database or disk is full",
                        "disk is full"})
    if (err.find(w) != std::string::npos)
      return true;
  return false;
}

// Sweeps `point:N` (or `point:N+`) over N until the command stops failing;
// after each failure the cache verifies clean and a rerun without faults
// completes. Returns how many distinct failure points were exercised.
int sweep(const char* point, bool and_after, int stride, const std::vector<std::string>& args,
          const fs::path& seed_from = {}) {
  int failures = 0;
  for (int n = 1;; n += stride) {
    CAPTURE(n);
    REQUIRE_MESSAGE(n < 100000, "the sweep does not end");
    Cache cache;
    if (!seed_from.empty())
      copy_cache(seed_from, cache.db());
    std::string plan = std::string(point) + ":" + std::to_string(n) + (and_after ? "+" : "");
    RunResult r = run_env(precompile_argv(cache.db(), args), {"KILN_FAULT=" + plan});
    INFO(plan << ": " << describe(r));
    REQUIRE(r.exit_code < 128);
    if (r.exit_code == 0)
      return failures; // past the last write: nothing to fail any more
    ++failures;
    CHECK(says_injected_or_io(r.err));
    // Nothing half-written: the cache (if it got created) verifies clean,
    // and the same precompile without faults completes it.
    if (fs::exists(cache.db()) && fs::file_size(cache.db()) > 0)
      require_verify_clean(cache.db(), "after " + plan);
    json j = precompile_ok(cache, args);
    require_verify_clean(cache.db(), "after the rerun of " + plan);
    CHECK(!j["roots"].empty());
  }
}

} // namespace

TEST_SUITE("reliability.faults") {

TEST_CASE("the Nth cache write fails: a clear error, nothing half-written, a rerun completes") {
  std::vector<std::string> args = {kiln_it::data("diamond.ll"), kiln_it::data("chain8.ll")};
  // Short mode samples the write points (a few hundred in all); the long
  // mode fails every second one.
  int stride = scaled(29, 2);
  int io = sweep("sqlite-write", false, stride, args);
  int full = sweep("disk-full", true, scaled(61, 5), args);
  int sync = sweep("sqlite-sync", false, 1, args);
  CHECK(io > 0);
  CHECK(full > 0);
  CHECK(sync > 0);
  // Into a cache that already holds other work: that work survives intact.
  Cache seeded;
  precompile_ok(seeded, {kiln_it::data("nested.ll")});
  int seeded_io = sweep("sqlite-write", false, scaled(53, 5), args, seeded.db());
  figure("faults: " + std::to_string(io) + " failed-write points, " + std::to_string(full) +
         " disk-full points, " + std::to_string(sync) + " failed-fsync points, " +
         std::to_string(seeded_io) + " failed writes into a non-empty cache: each a clear "
         "error, verify clean, rerun completes");
}

TEST_CASE("a malformed fault plan is ignored with a notice") {
  Cache cache;
  RunResult r = run_env(precompile_argv(cache.db(), {kiln_it::data("nested.ll")}),
                        {"KILN_FAULT=sqlite-write:0"});
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("ignoring KILN_FAULT") != std::string::npos);
}

TEST_CASE("an export whose file write fails leaves no file behind") {
  TempDir dir;
  fs::path out = dir.path() / "bundle.kiln";
  RunResult r = run_env({inspect_bin().string(), "--cache", template_cache().string(), "export",
                         out.string()},
                        {"KILN_FAULT=file-write"});
  INFO(describe(r));
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code < 128);
  CHECK(r.err.find("injected fault at file-write") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK(fs::is_empty(dir.path())); // no temp file left either
}

TEST_CASE("the linker library fails to load, or a link fails: clear errors, no image stored") {
  Cache cache;
  precompile_ok(cache, {kiln_it::data("diamond.ll"), "--no-link"});
  auto images = [&] {
    Db db(cache.db());
    return db.rows("SELECT count(*) FROM images")[0][0];
  };
  REQUIRE(images() == "0");
  for (const char* plan : {"dlopen:kiln-link", "link:host"}) {
    CAPTURE(plan);
    RunResult p = probe(cache.db(), "dia_root", 5, {std::string("KILN_FAULT=") + plan});
    INFO(describe(p));
    CHECK(p.exit_code == 1);
    CHECK(p.err.find(std::string("injected fault at ") + plan) != std::string::npos);
    CHECK(images() == "0");
    require_verify_clean(cache.db(), std::string("after ") + plan);
  }
  // A precompile whose image link fails says so and stores its jobs whole.
  Cache other;
  RunResult r = run_env(precompile_argv(other.db(), {kiln_it::data("diamond.ll")}),
                        {"KILN_FAULT=link:host"});
  INFO(describe(r));
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code < 128);
  CHECK(r.err.find("injected fault at link:host") != std::string::npos);
  require_verify_clean(other.db(), "after a failed image link");
  // Without the fault, the load links and stores the image.
  RunResult ok = probe(cache.db(), "dia_root");
  INFO(describe(ok));
  CHECK(ok.exit_code == 0);
  CHECK(images() == "1");
}

TEST_CASE("vendor libraries that fail to load are KILN_UNAVAILABLE with the reason") {
  Cache cache;
  RunResult r = run_env({precompile_bin().string(), "--cache", cache.db().string(), "--target",
                         "sm_90", "--no-link", kiln_it::data("gpu_nvptx.ll")},
                        {});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  // The probe loads for the host; this loads for sm_90 through the C API.
  RunResult p = run_env({inspect_bin().string(), "--cache", cache.db().string(), "image",
                         "k_nested", "--target", "sm_90", "-o",
                         (cache.dir() / "out.cubin").string()},
                        {"KILN_FAULT=dlopen:nvjitlink"});
  INFO(describe(p));
  CHECK(p.exit_code != 0);
  CHECK(p.exit_code < 128);
  CHECK(p.err.find("injected fault at dlopen:nvjitlink") != std::string::npos);
  CHECK_FALSE(fs::exists(cache.dir() / "out.cubin"));
}

} // TEST_SUITE
