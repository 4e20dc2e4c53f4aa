// Whether a cache's files may be believed: owners and modes of the file, its
// side files and its directory, checked with lstat before SQLite opens any
// of them, and side files created exclusively where others could plant them.
#include "storage/local/file_trust.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <pwd.h>
#include <unistd.h>

namespace kiln::storage {

namespace {

constexpr const char* kSideFiles[] = {"-wal", "-shm", "-journal", "-images", "-loads"};

// Where check_cache_files notes side file `ext`.
FileStamp& side_stamp(CacheFiles& files, const char* ext) {
  switch (ext[1]) {
  case 'w': return files.wal;
  case 's': return files.shm;
  case 'i': return files.images;
  case 'l': return files.loads;
  default: return files.journal;
  }
}

std::string user_name(uid_t uid) {
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
    return found->pw_name;
  return "no such user";
}

std::string who(uid_t uid) { return "uid " + std::to_string(uid) + " (" + user_name(uid) + ")"; }

std::string octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

std::string describe(const std::string& file, const struct stat& st) {
  return "'" + file + "' (owner " + who(st.st_uid) + ", mode " + octal(st.st_mode) + ")";
}

Error refused(const std::string& cache, const std::string& why) {
  return Error(Code::unavailable, "refusing cache '" + cache + "': " + why);
}

std::string trusted_owners_text() {
  uid_t me = ::geteuid();
  return "only files owned by you (" + user_name(me) + ", uid " + std::to_string(me) +
         "), by root or by a user KILN_TRUSTED_OWNERS names are trusted";
}

// The rules for the cache file and each side file.
Status check_file_rules(const std::string& cache, const std::string& file, const struct stat& st,
                        const std::string& dir, bool shared_dir, const TrustedOwners& owners) {
  if (owners.any)
    return Status::ok();
  if (S_ISLNK(st.st_mode))
    return refused(cache, "'" + file + "' is a symbolic link; Kiln neither follows nor creates "
                                       "a cache's files through one: name the file itself");
  if (!S_ISREG(st.st_mode))
    return refused(cache, "'" + file + "' is not a regular file (mode " + octal(st.st_mode) + ")");
  // In a directory others can write, only the caller's own files count
  // (KILN_TRUSTED_OWNERS does not widen it), so say that rather than suggest
  // the setting.
  if (shared_dir && st.st_uid != ::geteuid())
    return refused(cache, describe(file, st) + " is in '" + dir +
                              "', a directory others can write: only your own files are trusted "
                              "there. Remove '" + file +
                              "' if you did not make it, and keep shared caches in a directory "
                              "only their owner can write");
  if (!owners.trusts(st.st_uid))
    return refused(cache, describe(file, st) +
                              " belongs to another user, and whoever can write a cache's files "
                              "decides what code is loaded from it: " +
                              trusted_owners_text() + ". Remove '" + file +
                              "' if you did not make it, or add its owner to "
                              "KILN_TRUSTED_OWNERS if you trust that user");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return refused(cache, describe(file, st) +
                              " is writable by group or others, who could then decide what code "
                              "is loaded from it: remove their write permission (chmod go-w '" +
                              file + "')");
  return Status::ok();
}

} // namespace

bool TrustedOwners::trusts(uid_t uid) const {
  if (any || uid == 0 || uid == ::geteuid())
    return true;
  for (uid_t u : extra)
    if (u == uid)
      return true;
  return false;
}

Result<TrustedOwners> TrustedOwners::parse(std::string_view list) {
  TrustedOwners out;
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find_first_of(", \t", at);
    if (end == std::string_view::npos)
      end = list.size();
    std::string item(list.substr(at, end - at));
    at = end + 1;
    if (item.empty())
      continue;
    if (item == "*") {
      out.any = true;
      continue;
    }
    if (item.find_first_not_of("0123456789") == std::string::npos && item.size() < 11) {
      out.extra.push_back(uid_t(std::strtoul(item.c_str(), nullptr, 10)));
      continue;
    }
    struct passwd pw;
    struct passwd* found = nullptr;
    char buf[1024];
    if (::getpwnam_r(item.c_str(), &pw, buf, sizeof buf, &found) != 0 || !found)
      return make_error(Code::invalid_argument,
                        "KILN_TRUSTED_OWNERS names '" + item +
                            "', which is neither a user name nor a uid");
    out.extra.push_back(found->pw_uid);
  }
  return out;
}

Result<TrustedOwners> TrustedOwners::from_env() {
  const char* env = std::getenv("KILN_TRUSTED_OWNERS");
  std::string text = env ? env : "";
  if (text.empty())
    return TrustedOwners{};
  static std::mutex mu;
  static std::optional<std::pair<std::string, TrustedOwners>> last;
  std::lock_guard lock(mu);
  if (last && last->first == text)
    return last->second;
  KILN_TRY_ASSIGN(auto owners, parse(text));
  last.emplace(text, owners);
  return owners;
}

FileStamp FileStamp::of(const struct stat& st) {
  return {true, uint64_t(st.st_dev), uint64_t(st.st_ino), int64_t(st.st_size),
          int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

FileStamp FileStamp::at(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? of(st) : FileStamp{};
}

Result<CacheFiles> check_cache_files(const std::string& path, const std::string& dir,
                                     const TrustedOwners& owners) {
  CacheFiles out;
  out.dir = dir;
  if (::lstat(path.c_str(), &out.db_stat) == 0) {
    out.db = FileStamp::of(out.db_stat);
    if (S_ISLNK(out.db_stat.st_mode)) {
      // Refused even where every check is off: SQLite would resolve the link
      // and put the side files beside its target, where none of this looks.
      std::string target(4096, '\0');
      ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
      target.resize(n > 0 ? size_t(n) : 0);
      bool dangling = ::access(path.c_str(), F_OK) != 0;
      return refused(path, "it is a symbolic link to '" + target + "'" +
                               (dangling ? " (which does not exist)" : "") +
                               "; Kiln neither follows nor creates a cache through one, so "
                               "nothing was created: name the cache file itself");
    }
  }
  if (owners.any) {
    for (const char* ext : kSideFiles)
      side_stamp(out, ext) = FileStamp::at(path + ext);
    out.dir_exists = ::access(dir.c_str(), F_OK) == 0;
    return out;
  }
  struct stat d;
  if (::stat(dir.c_str(), &d) == 0) {
    out.dir_exists = true;
    if (!owners.trusts(d.st_uid))
      return refused(path, "its directory " + describe(dir, d) +
                               " belongs to another user, who could replace the cache or put "
                               "files beside it: " +
                               trusted_owners_text() +
                               ". Use a cache in a directory of your own, or add that user to "
                               "KILN_TRUSTED_OWNERS if you trust it");
    if (d.st_mode & (S_IWGRP | S_IWOTH)) {
      if (!(d.st_mode & S_ISVTX))
        return refused(path, "its directory " + describe(dir, d) +
                                 " is writable by group or others and not sticky: they could "
                                 "replace the cache or put a WAL beside it. Remove their write "
                                 "permission (chmod go-w '" +
                                 dir + "') or use a directory of your own");
      out.shared_dir = true;
    }
  }
  if (out.db.present)
    KILN_TRY(check_file_rules(path, path, out.db_stat, dir, out.shared_dir, owners));
  for (const char* ext : kSideFiles) {
    struct stat st;
    std::string side = path + ext;
    if (::lstat(side.c_str(), &st) != 0)
      continue;
    KILN_TRY(check_file_rules(path, side, st, dir, out.shared_dir, owners));
    side_stamp(out, ext) = FileStamp::of(st);
  }
  return out;
}

Status create_side_files(const std::string& path, const CacheFiles& files,
                         const TrustedOwners& owners) {
  if (!files.shared_dir || owners.any)
    return Status::ok();
  // SQLite gives its side files the database's mode; umask must not narrow it.
  mode_t mode = files.db.present ? (files.db_stat.st_mode & 0666) : 0600;
  for (const char* ext : {"-wal", "-shm"}) {
    if ((ext[1] == 'w' ? files.wal : files.shm).present)
      continue;
    std::string side = path + ext;
    int fd = ::open(side.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST) {
      // Made since the check, by another of our processes or by someone else.
      struct stat st;
      if (::lstat(side.c_str(), &st) != 0)
        return refused(path, "'" + side + "' appeared and vanished while the cache was opened");
      KILN_TRY(check_file_rules(path, side, st, files.dir, true, owners));
      continue;
    }
    if (fd < 0)
      return refused(path, "cannot create '" + side + "': " + std::strerror(errno));
    int rc = ::fchmod(fd, mode);
    ::close(fd);
    if (rc != 0)
      return refused(path, "cannot set the mode of '" + side + "': " + std::strerror(errno));
  }
  return Status::ok();
}

Status check_opened_file(const std::string& path, const struct stat& st, const CacheFiles& files,
                         const TrustedOwners& owners) {
  if (files.db.present && !files.db.same_file(FileStamp::of(st)))
    return refused(path, "the file was replaced while it was being opened");
  if (files.db.present)
    return Status::ok(); // the file that was checked
  return check_file_rules(path, path, st, files.dir, files.shared_dir, owners);
}

} // namespace kiln::storage
