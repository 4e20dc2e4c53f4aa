// Unit tests for the trust check of a cache's files
// (src/storage/local/file_trust.h): KILN_TRUSTED_OWNERS parsed, the owner and
// mode rules for the file, each side file and the directory, symbolic links,
// sticky shared directories, side files created exclusively there, and a file
// replaced between the check and the open.
#include "storage/local/file_trust.h"

#include "fixtures/files.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

constexpr uid_t kNobody = 65534;

void touch(const std::string& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  REQUIRE(fd >= 0);
  ::close(fd);
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

struct Files {
  TempDir dir = temp_dir("kiln-trust");
  std::string db = dir.path() + "/kiln.db";
  TrustedOwners owners;
  Result<CacheFiles> check() const { return check_cache_files(db, dir.path(), owners); }
  /// The refusal's message; REQUIREs a refusal.
  std::string refusal() const {
    auto r = check();
    REQUIRE(!r);
    CHECK(r.error().code == Code::unavailable);
    return r.error().message;
  }
};

bool has(const std::string& text, const std::string& part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("KILN_TRUSTED_OWNERS: names and uids, separated by commas or spaces; '*'; unknown "
          "names refused") {
  auto none = TrustedOwners::parse("");
  REQUIRE(none);
  CHECK(none->trusts(0));
  CHECK(none->trusts(::geteuid()));
  CHECK(none->trusts(4242) == (::geteuid() == 4242));
  auto some = TrustedOwners::parse("4242, root 4343,,");
  REQUIRE(some);
  CHECK(some->trusts(4242));
  CHECK(some->trusts(4343));
  CHECK(!some->trusts(4444));
  CHECK(!some->any);
  auto named = TrustedOwners::parse("root");
  REQUIRE(named);
  CHECK(named->extra == std::vector<uid_t>{0});
  auto all = TrustedOwners::parse("*");
  REQUIRE(all);
  CHECK(all->any);
  CHECK(all->trusts(4444));
  auto bad = TrustedOwners::parse("4242,no-such-user-kiln");
  REQUIRE(!bad);
  CHECK(bad.error().code == Code::invalid_argument);
  CHECK(has(bad.error().message, "'no-such-user-kiln'"));

  ::setenv("KILN_TRUSTED_OWNERS", "4545", 1);
  auto env = TrustedOwners::from_env();
  REQUIRE(env);
  CHECK(env->trusts(4545));
  ::setenv("KILN_TRUSTED_OWNERS", "4646", 1); // a change is seen
  env = TrustedOwners::from_env();
  REQUIRE(env);
  CHECK(!env->trusts(4545));
  CHECK(env->trusts(4646));
  ::unsetenv("KILN_TRUSTED_OWNERS");
}

TEST_CASE("your own 0600 cache and side files in a 0700 directory pass; missing ones are "
          "reported absent") {
  Files f;
  auto empty = f.check();
  REQUIRE(empty);
  CHECK(!empty->db.present);
  CHECK(empty->dir_exists);
  CHECK(!empty->shared_dir);
  touch(f.db, 0600);
  touch(f.db + "-wal", 0600);
  touch(f.db + "-shm", 0644); // readable by others is fine
  auto r = f.check();
  REQUIRE(r);
  CHECK(r->db.present);
  CHECK(r->wal.present);
  CHECK(r->shm.present);
  CHECK(!r->journal.present);
  CHECK(r->db.same_file(FileStamp::at(f.db)));
}

TEST_CASE("a file or directory writable by group or others is refused, naming it and its mode") {
  Files f;
  touch(f.db, 0600);
  for (const char* ext : {"", "-wal", "-shm", "-journal"}) {
    CAPTURE(ext);
    std::string file = f.db + ext;
    touch(file, 0620);
    std::string why = f.refusal();
    CHECK(has(why, "'" + file + "'"));
    CHECK(has(why, "mode 0620"));
    CHECK(has(why, "chmod go-w"));
    REQUIRE(::chmod(file.c_str(), 0600) == 0);
    if (*ext)
      ::unlink(file.c_str());
  }
  REQUIRE(f.check());
  REQUIRE(::chmod(f.dir.path().c_str(), 0770) == 0);
  std::string why = f.refusal();
  CHECK(has(why, "directory '" + f.dir.path() + "'"));
  CHECK(has(why, "mode 0770"));
  CHECK(has(why, "not sticky"));
  // Owners trusted or not, what anyone may write is not; "*" turns the checks off.
  f.owners = *TrustedOwners::parse("root");
  CHECK(!f.check());
  f.owners = *TrustedOwners::parse("*");
  CHECK(f.check());
  REQUIRE(::chmod(f.dir.path().c_str(), 0700) == 0);
}

TEST_CASE("a symbolic link at the cache path is refused, dangling or not, whatever is trusted") {
  Files f;
  std::string target = f.dir.path() + "/target.db";
  REQUIRE(::symlink(target.c_str(), f.db.c_str()) == 0);
  std::string why = f.refusal();
  CHECK(has(why, "symbolic link to '" + target + "' (which does not exist)"));
  touch(target, 0600);
  CHECK(!has(f.refusal(), "does not exist"));
  f.owners = *TrustedOwners::parse("*");
  CHECK(!f.check());
  // A side file that is a link.
  f.owners = {};
  ::unlink(f.db.c_str());
  touch(f.db, 0600);
  REQUIRE(::symlink(target.c_str(), (f.db + "-wal").c_str()) == 0);
  CHECK(has(f.refusal(), "'" + f.db + "-wal' is a symbolic link"));
}

TEST_CASE("files of another user are refused unless KILN_TRUSTED_OWNERS names that user") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: not running as root (CI runs as root): cannot chown to uid 65534");
    return;
  }
  Files f;
  touch(f.db, 0600);
  for (const char* ext : {"", "-wal", "-shm", "-journal"}) {
    CAPTURE(ext);
    std::string file = f.db + ext;
    if (*ext)
      touch(file, 0600);
    REQUIRE(::chown(file.c_str(), kNobody, kNobody) == 0);
    f.owners = {};
    std::string why = f.refusal();
    CHECK(has(why, "'" + file + "' (owner uid 65534"));
    CHECK(has(why, "mode 0600"));
    CHECK(has(why, "KILN_TRUSTED_OWNERS"));
    f.owners = *TrustedOwners::parse("65534");
    CHECK(f.check());
    REQUIRE(::chown(file.c_str(), 0, 0) == 0);
  }
  REQUIRE(::chown(f.dir.path().c_str(), kNobody, kNobody) == 0);
  f.owners = {};
  CHECK(has(f.refusal(), "directory '" + f.dir.path() + "' (owner uid 65534"));
  f.owners = *TrustedOwners::parse("65534");
  CHECK(f.check());
  REQUIRE(::chown(f.dir.path().c_str(), 0, 0) == 0);
}

TEST_CASE("a sticky shared directory: only your own files; side files made exclusively before "
          "SQLite, and one planted meanwhile refused") {
  Files f;
  REQUIRE(::chmod(f.dir.path().c_str(), 01777) == 0);
  touch(f.db, 0640);
  auto r = f.check();
  REQUIRE(r);
  CHECK(r->shared_dir);
  REQUIRE(create_side_files(f.db, *r, f.owners));
  struct stat st;
  for (const char* ext : {"-wal", "-shm"}) {
    REQUIRE(::lstat((f.db + ext).c_str(), &st) == 0);
    CHECK(st.st_uid == ::geteuid());
    CHECK((st.st_mode & 07777) == 0640); // the cache file's mode, whatever the umask
    CHECK(st.st_size == 0);
  }
  // Present ones are left alone: creating again changes nothing.
  r = f.check();
  REQUIRE(r);
  CHECK(create_side_files(f.db, *r, f.owners));

  if (::geteuid() != 0) {
    MESSAGE("skipped the other-user half: not running as root");
    return;
  }
  // A -wal planted between the check and the creation: the exclusive
  // create fails, and the file found is checked.
  ::unlink((f.db + "-wal").c_str());
  auto before = f.check();
  REQUIRE(before);
  CHECK(!before->wal.present);
  touch(f.db + "-wal", 0600);
  REQUIRE(::chown((f.db + "-wal").c_str(), kNobody, kNobody) == 0);
  Status planted = create_side_files(f.db, *before, f.owners);
  REQUIRE(!planted);
  CHECK(has(planted.error().message, "'" + f.db + "-wal' (owner uid 65534"));
  // Found at the check: another user's file in a shared directory, refused
  // even when that user is trusted.
  f.owners = *TrustedOwners::parse("65534");
  CHECK(has(f.refusal(), "a directory others can write"));
  ::unlink((f.db + "-wal").c_str());
  REQUIRE(::chmod(f.dir.path().c_str(), 0700) == 0);
}

TEST_CASE("a cache file replaced between the check and the open is refused; a new one is "
          "checked") {
  Files f;
  touch(f.db, 0600);
  auto r = f.check();
  REQUIRE(r);
  struct stat st;
  REQUIRE(::stat(f.db.c_str(), &st) == 0);
  CHECK(check_opened_file(f.db, st, *r, f.owners));
  touch(f.db + ".new", 0600); // made while the old one exists: another inode
  REQUIRE(::rename((f.db + ".new").c_str(), f.db.c_str()) == 0);
  REQUIRE(::stat(f.db.c_str(), &st) == 0);
  Status replaced = check_opened_file(f.db, st, *r, f.owners);
  REQUIRE(!replaced);
  CHECK(has(replaced.error().message, "replaced"));
  // Not there at the check: the file found after creating it must pass.
  ::unlink(f.db.c_str());
  auto none = f.check();
  REQUIRE(none);
  touch(f.db, 0666);
  REQUIRE(::stat(f.db.c_str(), &st) == 0);
  CHECK(!check_opened_file(f.db, st, *none, f.owners));
}
