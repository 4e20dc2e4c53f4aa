// Unit tests for the trust check of a cache's files
// (src/storage/file_trust.h): KILN_TRUSTED_OWNERS parsed, the owner and
// mode rules for the file, each side file and every directory from / down,
// symbolic links, sticky shared directories refused, the directory held open,
// and a file replaced between the check and the open.
#include "storage/file_trust.h"

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
  // Uids are parsed whole: 2^32 + 65534 is not uid 65534.
  for (const char* wide : {"4295032830", "4294967295", "99999999999999999999999"}) {
    CAPTURE(wide);
    auto w = TrustedOwners::parse(wide);
    REQUIRE(!w);
    CHECK(w.error().code == Code::invalid_argument);
    CHECK(has(w.error().message, "out of range"));
  }
  auto top = TrustedOwners::parse("4294967294");
  REQUIRE(top);
  CHECK(top->trusts(uid_t(4294967294u)));

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
  REQUIRE(empty->pinned);
  struct stat held, named;
  REQUIRE(::fstat(empty->pinned->fd(), &held) == 0);
  REQUIRE(::stat(f.dir.path().c_str(), &named) == 0);
  CHECK(held.st_ino == named.st_ino);
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
  CHECK(has(why, "writable by others"));
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

TEST_CASE("a cache directly in a sticky shared directory is refused, saying what to do; one in "
          "a directory of your own under it passes") {
  Files f;
  REQUIRE(::chmod(f.dir.path().c_str(), 01777) == 0);
  touch(f.db, 0600);
  std::string why = f.refusal();
  CHECK(has(why, "mode 1777"));
  CHECK(has(why, "sticky, like /tmp"));
  CHECK(has(why, "mkdir -m 700 '" + f.dir.path() + "/kiln-"));
  // Trusted owners do not widen what anyone may write.
  f.owners = *TrustedOwners::parse("root");
  CHECK(!f.check());
  f.owners = {};
  std::string own = f.dir.path() + "/mine";
  REQUIRE(::mkdir(own.c_str(), 0700) == 0);
  touch(own + "/kiln.db", 0600);
  CHECK(check_cache_files(own + "/kiln.db", own, f.owners));
  REQUIRE(::chmod(f.dir.path().c_str(), 0700) == 0);
}

TEST_CASE("every directory above the cache's is checked: another user's, or one others can "
          "write and not sticky, is refused; a link is followed only from a safe directory") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: not running as root (CI runs as root): cannot chown to uid 65534");
    return;
  }
  Files f;
  std::string pd = f.dir.path() + "/pd", d = pd + "/d";
  REQUIRE(::mkdir(pd.c_str(), 0755) == 0);
  REQUIRE(::mkdir(d.c_str(), 0700) == 0);
  std::string db = d + "/c.db";
  touch(db, 0600);
  CHECK(check_cache_files(db, d, f.owners));
  // The ancestor swap needs an ancestor another user owns.
  REQUIRE(::chown(pd.c_str(), kNobody, kNobody) == 0);
  auto r = check_cache_files(db, d, f.owners);
  REQUIRE(!r);
  CHECK(has(r.error().message, "the directory above it '" + pd + "' (owner uid 65534"));
  CHECK(check_cache_files(db, d, *TrustedOwners::parse("65534")));
  REQUIRE(::chown(pd.c_str(), 0, 0) == 0);
  // Writable by others and not sticky.
  REQUIRE(::chmod(pd.c_str(), 0777) == 0);
  r = check_cache_files(db, d, f.owners);
  REQUIRE(!r);
  CHECK(has(r.error().message, "'" + pd + "' (owner uid 0 (root), mode 0777)"));
  CHECK(has(r.error().message, "not sticky"));
  // Sticky: the entry below is ours, and only its owner can rename it.
  REQUIRE(::chmod(pd.c_str(), 01777) == 0);
  CHECK(check_cache_files(db, d, f.owners));
  // A link in that sticky directory, planted by another user, to our own
  // directory: not followed. The same link made by us is.
  std::string link = pd + "/link";
  REQUIRE(::symlink("d", link.c_str()) == 0);
  REQUIRE(::lchown(link.c_str(), kNobody, kNobody) == 0);
  r = check_cache_files(link + "/c.db", link, f.owners);
  REQUIRE(!r);
  CHECK(has(r.error().message, "symbolic link owned by uid 65534"));
  REQUIRE(::lchown(link.c_str(), 0, 0) == 0);
  auto followed = check_cache_files(link + "/c.db", link, f.owners);
  REQUIRE(followed);
  struct stat held, real;
  REQUIRE(::fstat(followed->pinned->fd(), &held) == 0);
  REQUIRE(::stat(d.c_str(), &real) == 0);
  CHECK(held.st_ino == real.st_ino);
  REQUIRE(::chmod(pd.c_str(), 0755) == 0);
}

TEST_CASE("the held directory is the one checked, whatever is renamed above it afterwards") {
  Files f;
  std::string a = f.dir.path() + "/a", b = f.dir.path() + "/b";
  REQUIRE(::mkdir(a.c_str(), 0700) == 0);
  REQUIRE(::mkdir(b.c_str(), 0700) == 0);
  touch(a + "/kiln.db", 0600);
  auto r = check_cache_files(a + "/kiln.db", a, f.owners);
  REQUIRE(r);
  REQUIRE(r->pinned);
  // Swapped: the name now leads to b; the held one still to a's file.
  REQUIRE(::rename(a.c_str(), (f.dir.path() + "/t").c_str()) == 0);
  REQUIRE(::rename(b.c_str(), a.c_str()) == 0);
  std::string through = r->pinned->path_of("kiln.db");
  if (through.empty()) {
    MESSAGE("skipped the rest: /proc is not mounted");
    return;
  }
  CHECK(path_exists(through));
  CHECK(!path_exists(a + "/kiln.db"));
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
