// Unit tests for files (src/support/files.cpp): atomic writes, temporary
// directories, the default cache path, bounded reads, and the check that
// keeps writes off a database and its side files.
#include "support/files.h"

#include "fixtures/env.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::test;

TEST_CASE("write_file_atomic replaces whole and TempDir cleans up") {
  std::string dir_path;
  {
    auto dir = TempDir::create("kiln-test");
    REQUIRE(dir);
    dir_path = dir->path();
    std::string f = dir->path() + "/a/b/file";
    REQUIRE(make_dirs(dir->path() + "/a/b"));
    REQUIRE(write_file_atomic(f, "first"));
    REQUIRE(write_file_atomic(f, "second"));
    auto r = read_file(f);
    REQUIRE(r);
    CHECK(*r == "second");
    auto missing = read_file(dir->path() + "/nope");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Code::not_found);
  }
  struct stat st;
  CHECK(::stat(dir_path.c_str(), &st) != 0);
}

TEST_CASE("default cache path follows KILN_CACHE, then XDG_CACHE_HOME, then HOME") {
  // Each variable is put back at the end: later tests in this process must
  // see the real home again.
  {
    EnvVar kiln_cache("KILN_CACHE", "/x/k.db");
    CHECK(*default_cache_path() == "/x/k.db");
  }
  EnvVar no_kiln_cache("KILN_CACHE", nullptr);
  {
    EnvVar xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(*default_cache_path() == "/xdg/kiln/kiln.db");
  }
  EnvVar no_xdg("XDG_CACHE_HOME", nullptr);
  EnvVar home("HOME", "/home/u");
  CHECK(*default_cache_path() == "/home/u/.cache/kiln/kiln.db");
}

TEST_CASE("read_file refuses a file over its maximum before reading it") {
  auto dir = TempDir::create("kiln-test");
  REQUIRE(dir);
  std::string f = dir->path() + "/big";
  REQUIRE(write_file_atomic(f, std::string(5000, 'x')));
  auto whole = read_file(f, 5000);
  REQUIRE(whole);
  CHECK(whole->size() == 5000);
  auto over = read_file(f, 4999);
  REQUIRE_FALSE(over);
  CHECK(over.error().code == Code::corrupt);
  CHECK(over.error().message == "'" + f + "' is 5000 bytes, over the 4999-byte maximum");
  // Something that is not a regular file is held to it as it is read.
  auto dev = read_file("/dev/zero", 100000);
  REQUIRE_FALSE(dev);
  CHECK(dev.error().message.find("over the 100000-byte maximum") != std::string::npos);
}

TEST_CASE("refuse_database_file: the database and its side files, by inode or by name, however "
          "spelled") {
  auto dir = TempDir::create("kiln-test");
  REQUIRE(dir);
  const std::string d = dir->path();
  const std::string db = d + "/c.db";
  REQUIRE(make_dirs(d + "/sub"));
  REQUIRE(write_file_atomic(db, "database"));
  REQUIRE(write_file_atomic(db + "-wal", "wal"));
  REQUIRE(::link(db.c_str(), (d + "/hard").c_str()) == 0);
  REQUIRE(::symlink(db.c_str(), (d + "/sym").c_str()) == 0);
  REQUIRE(::symlink((db + "-wal").c_str(), (d + "/sym-wal").c_str()) == 0);
  auto refused = [&](const std::string& path, const std::string& which) {
    CAPTURE(path);
    Status s = refuse_database_file(path, db, "export destination");
    REQUIRE_FALSE(s);
    CHECK(s.error().code == Code::invalid_argument);
    CHECK(s.error().message ==
          "export destination '" + path + "' is " + which + "; use another path");
  };
  const std::string itself = "the cache '" + db + "' itself";
  refused(db, itself);
  refused(d + "/./c.db", itself);
  refused(d + "/sub/../c.db", itself);
  refused(d + "/hard", itself);
  refused(d + "/sym", itself);
  refused(d + "//c.db", itself);
  refused(db + "-wal", "the wal file of the cache '" + db + "'");
  refused(d + "/sym-wal", "the wal file of the cache '" + db + "'");
  // Side files that do not exist (yet): by directory and name.
  refused(d + "/sub/../c.db-shm", "the shm file of the cache '" + db + "'");
  refused(db + "-journal", "the journal file of the cache '" + db + "'");
  // Kiln's own side files: published images, the load log, gc's reserve.
  REQUIRE(write_file_atomic(db + "-images", "images"));
  refused(db + "-images", "the images file of the cache '" + db + "'");
  refused(d + "/sub/../c.db-loads", "the loads file of the cache '" + db + "'");
  refused(db + "-reserve", "the reserve file of the cache '" + db + "'");
  // The database through a symbolic link: its side files are the target's.
  const std::string link_db = d + "/sub/link.db";
  REQUIRE(::symlink(db.c_str(), link_db.c_str()) == 0);
  for (const std::string& p : {db, db + "-wal", d + "/c.db-journal"})
    CHECK_FALSE(refuse_database_file(p, link_db, "export destination"));
  // Anything else passes: other names beside it, and the same name elsewhere.
  for (const std::string& p : {d + "/c.db.kiln", d + "/c.db-walx", d + "/sub/c.db",
                               d + "/other", std::string("relative-name")})
    CHECK(refuse_database_file(p, db, "export destination"));
  // Relative spellings against the working directory.
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd));
  REQUIRE(::chdir(d.c_str()) == 0);
  Status rel = refuse_database_file("c.db", db, "import source");
  Status rel_side = refuse_database_file("sub/../c.db-shm", "c.db", "import source");
  Status other = refuse_database_file("sub/c.db", "c.db", "import source");
  REQUIRE(::chdir(cwd) == 0);
  CHECK_FALSE(rel);
  CHECK_FALSE(rel_side);
  CHECK(other);
}

TEST_CASE("a temporary directory is removed when SIGINT or SIGTERM ends the process, and the "
          "process still ends by that signal") {
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      // The defaults, as in a program that sets no handler (the test
      // framework's own are inherited).
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      // As a link leaves it mid-way: a directory with files in it.
      auto dir = kiln::TempDir::create("kiln-link");
      if (!dir)
        ::_exit(3);
      for (const char* name : {"/0.o", "/1.o", "/image.so.tmp"})
        if (!kiln::write_scratch_file(dir->path() + name, "bytes"))
          ::_exit(4);
      std::string path = dir->path() + "\n";
      if (::write(fds[1], path.data(), path.size()) != ssize_t(path.size()))
        ::_exit(5);
      ::raise(sig);
      ::_exit(6); // not reached: the signal ends the process
    }
    ::close(fds[1]);
    char buf[1024];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(n > 1);
    std::string dir(buf, size_t(n - 1));
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    struct stat st;
    CHECK(::lstat(dir.c_str(), &st) != 0);
  }
}
