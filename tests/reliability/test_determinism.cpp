// Determinism beyond tests/integration/test_determinism.cpp: keys identical
// whatever the environment (locale, time zone, ASLR, HOME/TMPDIR, working
// directory, file names, -j), and artifacts and images byte-identical when
// the same units are compiled into two caches.
#include "common.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

using namespace kiln_rel;

namespace {

struct Variant {
  std::string what;
  std::vector<std::string> env;
  bool other_cwd = false;
  bool renamed_inputs = false;
  bool no_aslr = false;
  std::string jobs = "1";
};

json precompile_variant(const Variant& v, const Cache& cache, const TempDir& scratch) {
  std::vector<std::string> inputs;
  for (const std::string& f : fixture_files()) {
    if (v.renamed_inputs) {
      fs::path copy = scratch.path() / ("renamed-" + std::to_string(inputs.size()) + ".ll");
      fs::copy_file(kiln_it::data(f), copy, fs::copy_options::overwrite_existing);
      inputs.push_back(copy.string());
    } else {
      inputs.push_back(kiln_it::data(f));
    }
  }
  std::vector<std::string> argv;
  if (v.no_aslr) {
    argv = {"/usr/bin/setarch", "-R"};
  }
  argv.insert(argv.end(), {precompile_bin().string(), "--cache", cache.db().string(), "--json",
                           "-j", v.jobs});
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  RunResult r = run_env(argv, v.env, v.other_cwd ? scratch.path() : fs::path());
  INFO(v.what << ": " << describe(r));
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(!j.is_discarded());
  return normalized(j);
}

// Every stored artifact and image, as (key, kind, bytes as stored).
std::map<std::string, std::string> contents(const fs::path& db_path) {
  Db db(db_path);
  std::map<std::string, std::string> out;
  for (auto& r : db.rows("SELECT lower(hex(job_key)), format, raw_size, checksum, data FROM artifacts"))
    out["artifact " + r[0] + " " + r[1]] = r[2] + " " + r[3] + " " + r[4];
  for (auto& r : db.rows("SELECT lower(hex(i.closure_key)), l.arch, l.linker, i.raw_size, "
                         "i.checksum, i.data FROM images i JOIN image_links l ON l.id = i.link"))
    out["image " + r[0] + " " + r[1] + " " + r[2]] = r[3] + " " + r[4] + " " + r[5];
  return out;
}

} // namespace

TEST_SUITE("reliability.determinism") {

TEST_CASE("keys do not depend on locale, time zone, ASLR, HOME, TMPDIR, cwd, file names or -j") {
  std::vector<Variant> variants = {
      {"baseline", {}, false, false, false, "1"},
      {"German locale, far time zone, -j 8",
       {"LC_ALL=de_DE.UTF-8", "LANG=de_DE.UTF-8", "TZ=Pacific/Chatham"}, false, false, false, "8"},
      {"Turkish locale (dotless i), TZ west of UTC, other cwd",
       {"LC_ALL=tr_TR.UTF-8", "TZ=America/St_Johns"}, true, false, false, "3"},
      {"other HOME and TMPDIR, renamed inputs", {"HOME=/nonexistent", "TMPDIR=/var/tmp"}, false,
       true, false, "2"},
      {"ASLR off", {}, false, false, true, "4"},
  };
  if (!fs::exists("/usr/bin/setarch"))
    variants.pop_back();
  TempDir scratch;
  json base;
  for (const Variant& v : variants) {
    Cache cache;
    json j = precompile_variant(v, cache, scratch);
    if (base.is_null()) {
      base = j;
      REQUIRE(!base["jobs"].empty());
      continue;
    }
    INFO(v.what);
    CHECK(j == base);
  }
  figure("determinism: " + std::to_string(variants.size()) + " environments, " +
         std::to_string(base["jobs"].size()) + " job keys and " +
         std::to_string(base["roots"].size()) + " closure keys identical in each");
}

TEST_CASE("artifacts and images are byte-identical when compiled twice into two caches") {
  TempDir scratch;
  Cache a, b;
  precompile_variant({"first", {}, false, false, false, "1"}, a, scratch);
  precompile_variant({"second", {"TZ=Asia/Kathmandu", "LC_ALL=C.UTF-8"}, true, true, false, "4"}, b,
                     scratch);
  auto ca = contents(a.db()), cb = contents(b.db());
  REQUIRE(!ca.empty());
  size_t images = 0;
  for (const auto& [k, v] : ca)
    images += k.rfind("image ", 0) == 0;
  CHECK(images > 0);
  CHECK(ca.size() == cb.size());
  for (const auto& [k, v] : ca) {
    INFO(k);
    REQUIRE(cb.count(k) == 1);
    CHECK(cb[k] == v);
  }
  figure("determinism: " + std::to_string(ca.size() - images) + " artifacts and " +
         std::to_string(images) + " images byte-identical across two caches");
}

} // TEST_SUITE
