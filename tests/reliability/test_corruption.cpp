// Corruption: random bytes flipped in stored blobs are all caught by their
// checksums; the loader reports KILN_CORRUPT or relinks, never crashes and
// never hands damaged bytes to dlopen; verify names the damaged key. Damage
// anywhere in the file never crashes anything; a truncated or foreign file
// is refused without being modified.
#include "common.hpp"

#include <doctest/doctest.h>

#include "support/compress.h"

#include <fstream>
#include <set>

using namespace kiln_rel;

namespace {

struct Blob {
  std::string table; // "artifacts" or "images"
  std::string key;   // job key or closure key, as hex
  std::string detail; // format, or arch
  std::string rowid;
};

std::vector<Blob> blobs(Db& db) {
  std::vector<Blob> out;
  for (auto& r : db.rows("SELECT lower(hex(job_key)), format, rowid FROM artifacts"))
    out.push_back({"artifacts", r[0], r[1], r[2]});
  for (auto& r : db.rows("SELECT lower(hex(i.closure_key)), l.arch, i.rowid FROM images i JOIN "
                         "image_links l ON l.id = i.link"))
    out.push_back({"images", r[0], r[1], r[2]});
  return out;
}

// Flips 1..4 random bits of random bytes of one stored blob. Returns false
// if the damaged blob still decodes to the very same bytes: zstd ignores
// some header bits (e.g. the frame descriptor's unused bit), so such a flip
// changes nothing a reader gets and no content checksum can see it.
bool damage(Db& db, const Blob& b) {
  auto rows = db.rows("SELECT data, raw_size FROM " + b.table + " WHERE rowid = ?1", {b.rowid});
  REQUIRE(rows.size() == 1);
  std::string data = rows[0][0];
  size_t raw_size = size_t(std::stoull(rows[0][1]));
  REQUIRE(!data.empty());
  std::uniform_int_distribution<size_t> pos(0, data.size() - 1);
  std::uniform_int_distribution<int> bit(0, 7), count(1, 4);
  std::string before = data;
  int n = count(rng());
  for (int i = 0; i < n; ++i)
    data[pos(rng())] ^= char(1 << bit(rng()));
  if (data == before) // two flips of the same bit cancelled out
    data[0] ^= 1;
  db.update_blob("UPDATE " + b.table + " SET data = ?1 WHERE rowid = ?2", data, {b.rowid});
  auto was = kiln::zstd_decompress(before, raw_size);
  auto now = kiln::zstd_decompress(data, raw_size);
  REQUIRE(was);
  return !now || *now != *was;
}

// The root names whose closures use a damaged blob.
std::set<std::string> affected_names(Db& db, const Blob& b) {
  std::set<std::string> out;
  std::string sql =
      b.table == "images"
          ? "SELECT name FROM names WHERE lower(hex(closure_key)) = ?1"
          : "SELECT DISTINCT n.name FROM names n JOIN closure_members m ON m.closure_key = "
            "n.closure_key WHERE lower(hex(m.job_key)) = ?1";
  for (auto& r : db.rows(sql, {b.key}))
    out.insert(r[0]);
  return out;
}

bool mentions_damage(const std::string& err) {
  for (const char* w : {"checksum", "corrupt", "decompress", "zstd", "damaged", "not an ELF",
                        "malformed", "truncated"})
    if (err.find(w) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_SUITE("reliability.corruption") {

TEST_CASE("flipped bytes in stored blobs: every one detected, loads correct or KILN_CORRUPT") {
  std::map<std::string, int> expect;
  for (const Root& r : fixture_roots())
    expect[r.name] = r.expect;
  int trials = scaled(25, 1000);
  int detected = 0, damaged_total = 0, harmless = 0, loads_ok = 0, loads_corrupt = 0, relinked = 0;
  for (int t = 0; t < trials; ++t) {
    CAPTURE(t);
    Cache cache;
    copy_cache(template_cache(), cache.db());
    std::vector<Blob> damaged;
    std::set<std::string> names;
    {
      Db db(cache.db());
      std::vector<Blob> all = blobs(db);
      REQUIRE(!all.empty());
      std::uniform_int_distribution<size_t> pick(0, all.size() - 1);
      // Mostly one blob; every fifth trial an image and an artifact of the
      // same closure, so that the loader can neither use nor relink it.
      Blob first = all[pick(rng())];
      damaged.push_back(first);
      if (t % 5 == 4 && first.table == "images") {
        auto members = db.rows("SELECT lower(hex(a.job_key)), a.format, a.rowid FROM "
                               "closure_members m JOIN artifacts a ON a.job_key = m.job_key "
                               "WHERE lower(hex(m.closure_key)) = ?1",
                               {first.key});
        REQUIRE(!members.empty());
        auto& m = members[std::uniform_int_distribution<size_t>(0, members.size() - 1)(rng())];
        damaged.push_back({"artifacts", m[0], m[1], m[2]});
      }
      std::vector<Blob> changed;
      for (const Blob& b : damaged) {
        if (!damage(db, b)) {
          ++harmless;
          continue;
        }
        changed.push_back(b);
        ++damaged_total;
        auto n = affected_names(db, b);
        names.insert(n.begin(), n.end());
      }
      damaged = changed;
    }
    if (damaged.empty()) {
      // Nothing a reader can get changed: verify must agree.
      require_verify_clean(cache.db(), "after a flip that zstd ignores");
      continue;
    }
    // verify names every damaged key.
    json v = verify(cache.db());
    INFO(v.dump(2));
    REQUIRE_FALSE(v["ok"].get<bool>());
    for (const Blob& b : damaged) {
      bool named = false;
      for (const json& p : v["problems"])
        if (p["key"] == b.key &&
            p["kind"] == (b.table == "images" ? std::string("image") : std::string("artifact")))
          named = true;
      CHECK_MESSAGE(named, "verify does not name damaged " << b.table << " " << b.key);
      detected += named;
    }
    // Each affected root: the right value, or a clear corrupt error; never
    // a crash (the probe would die of a signal) and never a wrong value.
    for (const std::string& name : names) {
      RunResult p = probe(cache.db(), name);
      INFO("loading " << name << ": " << describe(p));
      REQUIRE(p.exit_code < 128);
      if (p.exit_code == 0) {
        int got = 0;
        REQUIRE(std::sscanf(p.out.c_str(), "result=%d", &got) == 1);
        REQUIRE(got == expect[name]);
        ++loads_ok;
        relinked += p.out.find("linker=1") != std::string::npos;
      } else {
        REQUIRE(p.exit_code == 1);
        CHECK_MESSAGE(mentions_damage(p.err), "not a clear damage report: " << p.err);
        ++loads_corrupt;
      }
    }
  }
  figure("corruption: " + std::to_string(detected) + " of " + std::to_string(damaged_total) +
         " damaged blobs named by verify, in " + std::to_string(trials) + " trials (" +
         std::to_string(harmless) + " more flips left the decoded bytes unchanged; " + std::to_string(loads_ok) +
         " loads still correct, " + std::to_string(relinked) + " of them relinked, " +
         std::to_string(loads_corrupt) + " refused as corrupt, 0 crashes)");
}

TEST_CASE("random damage anywhere in the file never crashes verify, ls or a load") {
  int trials = scaled(10, 300), refused = 0;
  std::string clean = slurp(template_cache());
  for (int t = 0; t < trials; ++t) {
    CAPTURE(t);
    Cache cache;
    std::string bytes = clean;
    std::uniform_int_distribution<size_t> pos(0, bytes.size() - 1);
    int n = std::uniform_int_distribution<int>(1, 16)(rng());
    for (int i = 0; i < n; ++i)
      bytes[pos(rng())] ^= char(1 << std::uniform_int_distribution<int>(0, 7)(rng()));
    {
      std::ofstream f(cache.db(), std::ios::binary);
      f << bytes;
    }
    for (const auto& argv :
         {std::vector<std::string>{inspect_bin().string(), "--cache", cache.db().string(), "verify"},
          std::vector<std::string>{inspect_bin().string(), "--cache", cache.db().string(), "ls"}}) {
      RunResult r = run(argv);
      INFO(describe(r));
      REQUIRE(r.exit_code < 128);
    }
    RunResult p = probe(cache.db(), fixture_roots().front().name);
    INFO(describe(p));
    REQUIRE(p.exit_code < 128);
    if (p.exit_code == 0)
      CHECK(p.out.find("result=" + std::to_string(fixture_roots().front().expect) + " ") == 0);
    else
      ++refused;
  }
  figure("corruption: " + std::to_string(trials) + " caches damaged at random file offsets: 0 "
         "crashes, " + std::to_string(refused) + " loads refused, the rest correct");
}

TEST_CASE("a truncated cache is refused and left exactly as it was") {
  std::string clean = slurp(template_cache());
  for (size_t keep : {clean.size() / 2, clean.size() - 4096, size_t(4096)}) {
    CAPTURE(keep);
    Cache cache;
    {
      std::ofstream f(cache.db(), std::ios::binary);
      f << clean.substr(0, keep);
    }
    std::string before = slurp(cache.db());
    for (const auto& argv :
         {std::vector<std::string>{inspect_bin().string(), "--cache", cache.db().string(), "ls"},
          std::vector<std::string>{inspect_bin().string(), "--cache", cache.db().string(), "verify"},
          std::vector<std::string>{precompile_bin().string(), "--cache", cache.db().string(),
                                   kiln_it::data("nested.ll")}}) {
      RunResult r = run(argv);
      INFO(describe(r));
      CHECK(r.exit_code != 0);
      CHECK(r.exit_code < 128);
      CHECK(r.err.find("truncated") != std::string::npos);
    }
    RunResult p = probe(cache.db(), "dia_root");
    INFO(describe(p));
    CHECK(p.exit_code == 1);
    CHECK(p.err.find("truncated") != std::string::npos);
    CHECK(slurp(cache.db()) == before);
    CHECK_FALSE(fs::exists(cache.db().string() + "-wal"));
  }
}

TEST_CASE("a file of random bytes is refused and left exactly as it was") {
  for (size_t size : {size_t(1), size_t(99), size_t(4096), size_t(100000)}) {
    CAPTURE(size);
    Cache cache;
    std::string junk(size, '\0');
    for (char& c : junk)
      c = char(rng()());
    {
      std::ofstream f(cache.db(), std::ios::binary);
      f << junk;
    }
    RunResult r = run({inspect_bin().string(), "--cache", cache.db().string(), "ls"});
    INFO(describe(r));
    CHECK(r.exit_code != 0);
    CHECK(r.exit_code < 128);
    RunResult p = probe(cache.db(), "dia_root");
    CHECK(p.exit_code == 1);
    CHECK(slurp(cache.db()) == junk);
  }
}

} // TEST_SUITE
