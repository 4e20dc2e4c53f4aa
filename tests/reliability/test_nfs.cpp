// Network file systems: a cache on NFS, SMB/CIFS, FUSE, ... runs with a
// rollback journal and no memory mapping instead of WAL (whose shared-memory
// index such file systems do not keep coherent), with a one-line notice.
#include "common.hpp"

#include <doctest/doctest.h>

#include <fstream>

#include "support/files.h"

using namespace kiln_rel;

namespace {

// Byte 18 of an SQLite header: 1 = rollback journal, 2 = WAL.
int journal_byte(const fs::path& db) {
  std::string h = slurp(db);
  REQUIRE(h.size() >= 100);
  return h[18];
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1))
    ++n;
  return n;
}

} // namespace

TEST_SUITE("reliability.nfs") {

TEST_CASE("detection: a local directory is local; the override names the file system") {
  TempDir dir;
  const char* saved = std::getenv("KILN_NETWORK_FS");
  std::string keep = saved ? saved : "";
  ::unsetenv("KILN_NETWORK_FS");
  CHECK(kiln::network_fs_kind((dir.path() / "kiln.db").string()).empty());
  CHECK(kiln::network_fs_kind("/proc/self/status").empty());
  ::setenv("KILN_NETWORK_FS", "cifs", 1);
  CHECK(kiln::network_fs_kind((dir.path() / "kiln.db").string()) == "cifs");
  ::setenv("KILN_NETWORK_FS", "0", 1);
  CHECK(kiln::network_fs_kind((dir.path() / "kiln.db").string()).empty());
  if (saved)
    ::setenv("KILN_NETWORK_FS", keep.c_str(), 1);
  else
    ::unsetenv("KILN_NETWORK_FS");
}

TEST_CASE("on a network file system: rollback journal, one notice, loads and verifies") {
  Cache cache;
  std::vector<std::string> env = {"KILN_NETWORK_FS=nfs"};
  RunResult r = run_env({precompile_bin().string(), "--cache", cache.db().string(),
                         kiln_it::data("diamond.ll"), kiln_it::data("nested.ll")},
                        env);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(count(r.err, "network file system (nfs)") == 1);
  CHECK(journal_byte(cache.db()) == 1);
  CHECK_FALSE(fs::exists(cache.db().string() + "-wal"));
  RunResult p = probe(cache.db(), "dia_root", 5, env);
  INFO(describe(p));
  CHECK(p.exit_code == 0);
  CHECK(count(p.err, "network file system") == 1);
  CHECK(journal_byte(cache.db()) == 1);
  // The same file then opened locally goes back to WAL, silently.
  RunResult v = run({inspect_bin().string(), "--cache", cache.db().string(), "verify"});
  INFO(describe(v));
  CHECK(v.exit_code == 0);
  CHECK(v.err.find("network") == std::string::npos);
}

TEST_CASE("a WAL cache moved onto a network file system is converted at open") {
  Cache cache;
  copy_cache(template_cache(), cache.db());
  CHECK(journal_byte(cache.db()) == 2);
  RunResult p = probe(cache.db(), "dia_root", 5, {"KILN_NETWORK_FS=fuse"});
  INFO(describe(p));
  CHECK(p.exit_code == 0);
  CHECK(count(p.err, "network file system (fuse)") == 1);
  CHECK(journal_byte(cache.db()) == 1);
  require_verify_clean(cache.db(), "after the conversion");
}

} // TEST_SUITE
