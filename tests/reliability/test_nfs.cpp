// Network file systems: a cache on NFS, SMB/CIFS, FUSE, ... runs with a
// rollback journal and no memory mapping instead of WAL (whose shared-memory
// index such file systems do not keep coherent), with a one-line notice.
#include "common.hpp"

#include <doctest/doctest.h>

#include <fstream>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

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


TEST_CASE("a reader opening while a writer grows the file never sees it as truncated") {
  // In rollback-journal mode a commit writes page 1, with the new page
  // count, before the pages that extend the file: an open in that window
  // reads a header that claims more than the file holds. That is a commit
  // in progress (its -journal exists), not a truncated cache.
  Cache cache;
  std::vector<std::string> env = {"KILN_NETWORK_FS=nfs"};
  RunResult r = run_env({precompile_bin().string(), "--cache", cache.db().string(),
                         kiln_it::data("diamond.ll")},
                        env);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  REQUIRE(journal_byte(cache.db()) == 1);
  {
    Db db(cache.db());
    db.exec("CREATE TABLE growth(x BLOB)");
  }
  std::string path = cache.db().string();
  pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    // Transactions of 80 KB that extend the file, emptied and vacuumed now
    // and then so that it grows again; for three seconds.
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
      ::_exit(2);
    sqlite3_busy_timeout(db, 30000);
    time_t end = ::time(nullptr) + 3;
    for (int n = 0; ::time(nullptr) < end; ++n) {
      std::string sql = "BEGIN;";
      for (int i = 0; i < 20; ++i)
        sql += "INSERT INTO growth VALUES(randomblob(4000));";
      sql += "COMMIT;";
      if (n % 20 == 19)
        sql += "DELETE FROM growth; VACUUM;";
      if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
        ::_exit(3);
      ::usleep(2000); // a rollback journal's readers wait for a gap between writes
    }
    sqlite3_close_v2(db);
    ::_exit(0);
  }
  int opens = 0;
  std::string failure;
  int status = 0;
  bool reaped = false;
  for (; failure.empty(); ++opens) {
    if (::waitpid(writer, &status, WNOHANG) == writer) {
      reaped = true;
      break;
    }
    RunResult p = probe(cache.db(), "dia_root", 5, env);
    if (p.exit_code != 0)
      failure = describe(p);
  }
  if (!reaped)
    ::waitpid(writer, &status, 0);
  INFO(failure);
  CHECK(failure.empty());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(opens > 10);
  Db(cache.db()).exec("DROP TABLE growth");
  require_verify_clean(cache.db(), "after the writer");
}

} // TEST_SUITE
