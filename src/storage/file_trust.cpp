// Whether a cache's files may be believed: every directory from / down to
// the cache's, walked by descriptor and held open, then owners and modes of
// the file and its side files, checked before SQLite opens any of them.
#include "storage/file_trust.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <pwd.h>
#include <unistd.h>
#include <vector>

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
                        const TrustedOwners& owners) {
  if (owners.any)
    return Status::ok();
  if (S_ISLNK(st.st_mode))
    return refused(cache, "'" + file + "' is a symbolic link; Kiln neither follows nor creates "
                                       "a cache's files through one: name the file itself");
  if (!S_ISREG(st.st_mode))
    return refused(cache, "'" + file + "' is not a regular file (mode " + octal(st.st_mode) + ")");
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


// One directory on the way from `/` to a cache's: owned by a trusted owner,
// and writable by no one else unless sticky (only the owner of an entry
// can rename or remove it there; the entry below is checked in turn). The
// cache's own directory is never writable by others, sticky or not: they
// could create its journal or WAL between any check and SQLite's open.
Status check_dir_rules(const std::string& cache, const std::string& where, const struct stat& st,
                       bool last, const TrustedOwners& owners) {
  if (!owners.trusts(st.st_uid))
    return refused(cache, (last ? "its directory " : "the directory above it ") +
                              describe(where, st) +
                              " belongs to another user, who could rename it and put other "
                              "files in the cache's place: " +
                              trusted_owners_text() +
                              ". Use a cache in a directory whose every directory up to / is "
                              "your own or root's, or add that user to KILN_TRUSTED_OWNERS if "
                              "you trust it");
  if (!(st.st_mode & (S_IWGRP | S_IWOTH)))
    return Status::ok();
  if (last)
    return refused(cache, "its directory " + describe(where, st) +
                              " is writable by others" +
                              (st.st_mode & S_ISVTX ? " (sticky, like /tmp)" : "") +
                              ", who could create its journal or WAL, which SQLite replays, "
                              "between any check and SQLite's open of it. Keep the cache in a "
                              "directory only you can write, e.g. one of your own under it "
                              "(mkdir -m 700 '" +
                              (where == "/" ? std::string() : where) + "/kiln-" +
                              user_name(::geteuid()) + "')");
  if (st.st_mode & S_ISVTX)
    return Status::ok();
  return refused(cache, "the directory above it " + describe(where, st) +
                            " is writable by group or others and not sticky: they could rename "
                            "what is below it and put other files in the cache's place. Remove "
                            "their write permission (chmod go-w '" +
                            where + "') or use a directory of your own");
}

void push_components(std::vector<std::string>& todo, const std::string& path) {
  // A stack: the next component is at the back.
  size_t end = path.size();
  while (end > 0) {
    size_t slash = path.rfind('/', end - 1);
    size_t begin = slash == std::string::npos ? 0 : slash + 1;
    if (end > begin)
      todo.emplace_back(path.substr(begin, end - begin));
    if (slash == std::string::npos)
      break;
    end = slash;
  }
}

std::string child_of(const std::string& where, const std::string& name) {
  if (name == "..") {
    size_t slash = where.rfind('/');
    return slash == 0 || slash == std::string::npos ? "/" : where.substr(0, slash);
  }
  return where == "/" ? "/" + name : where + "/" + name;
}

// Walks from `/` to `dir`, one openat(O_PATH | O_NOFOLLOW) at a time, and
// checks every directory it passes by its descriptor; a symbolic link on the
// way is followed only where its owner is trusted or its directory is
// writable by no one else. Null: `dir` does not exist (yet).
Result<std::shared_ptr<const PinnedDir>>
pin_directory(const std::string& cache, const std::string& dir, const TrustedOwners& owners) {
  std::string abs = dir;
  if (abs.empty() || abs.front() != '/') {
    char buf[4096];
    if (!::getcwd(buf, sizeof buf))
      return refused(cache, std::string("cannot tell the current directory: ") +
                                std::strerror(errno));
    abs = std::string(buf) + "/" + abs;
  }
  constexpr int kFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  std::vector<std::string> todo;
  push_components(todo, abs);
  int cur = ::open("/", kFlags);
  std::string where = "/";
  struct stat st {};
  if (cur < 0 || ::fstat(cur, &st) != 0) {
    int err = errno;
    if (cur >= 0)
      ::close(cur);
    return refused(cache, std::string("cannot open '/': ") + std::strerror(err));
  }
  auto fail = [&](Status s) {
    ::close(cur);
    return s.error();
  };
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    if (name == ".")
      continue;
    if (!owners.any)
      if (Status s = check_dir_rules(cache, where, st, false, owners); !s)
        return fail(s);
    int next = ::openat(cur, name.c_str(), kFlags);
    if (next < 0) {
      int err = errno;
      struct stat ls;
      if ((err == ELOOP || err == ENOTDIR) &&
          ::fstatat(cur, name.c_str(), &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode)) {
        if (++links > 40)
          return fail(refused(cache, "too many symbolic links on the way to '" + dir + "'"));
        std::string link = child_of(where, name);
        if (!owners.any && (st.st_mode & (S_IWGRP | S_IWOTH)) && !owners.trusts(ls.st_uid))
          return fail(refused(cache, "'" + link + "' is a symbolic link owned by " +
                                         who(ls.st_uid) + " in '" + where +
                                         "', a directory others can write: it is not "
                                         "followed. Name the cache's directory itself"));
        std::string target(4096, '\0');
        ssize_t n = ::readlinkat(cur, name.c_str(), target.data(), target.size());
        if (n <= 0 || size_t(n) >= target.size())
          return fail(refused(cache, "cannot read the symbolic link '" + link + "'"));
        target.resize(size_t(n));
        push_components(todo, target);
        if (target.front() == '/') {
          ::close(cur);
          cur = ::open("/", kFlags);
          where = "/";
          if (cur < 0 || ::fstat(cur, &st) != 0) {
            err = errno;
            if (cur >= 0)
              ::close(cur);
            return refused(cache, std::string("cannot open '/': ") + std::strerror(err));
          }
        }
        continue;
      }
      ::close(cur);
      if (err == ENOENT)
        return std::shared_ptr<const PinnedDir>();
      return refused(cache, "cannot open the directory '" + child_of(where, name) +
                                "': " + std::strerror(err));
    }
    ::close(cur);
    cur = next;
    where = child_of(where, name);
    if (::fstat(cur, &st) != 0)
      return fail(refused(cache, "cannot stat '" + where + "': " + std::strerror(errno)));
  }
  if (!owners.any)
    if (Status s = check_dir_rules(cache, where, st, true, owners); !s)
      return fail(s);
  return std::shared_ptr<const PinnedDir>(std::make_shared<PinnedDir>(cur));
}
} // namespace

PinnedDir::~PinnedDir() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string PinnedDir::path_of(const std::string& name) const {
  static const bool proc = ::access("/proc/self/fd", X_OK) == 0;
  if (!proc)
    return {};
  return "/proc/self/fd/" + std::to_string(fd_) + "/" + name;
}

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
    if (item.find_first_not_of("0123456789") == std::string::npos) {
      // Whole, never truncated: 2^32 + 65534 is not 65534. (uid_t)-1 means
      // "no user" to chown and setreuid, so it is no uid either.
      errno = 0;
      unsigned long long uid = std::strtoull(item.c_str(), nullptr, 10);
      if (errno == ERANGE || item.size() > 20 || uid >= uint64_t(uid_t(-1)))
        return make_error(Code::invalid_argument,
                          "KILN_TRUSTED_OWNERS names uid " + item +
                              ", which is out of range (uids are below " +
                              std::to_string(uint64_t(uid_t(-1))) + ")");
      out.extra.push_back(uid_t(uid));
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
    KILN_TRY_ASSIGN(out.pinned, pin_directory(path, dir, owners));
    out.dir_exists = out.pinned != nullptr;
    return out;
  }
  KILN_TRY_ASSIGN(out.pinned, pin_directory(path, dir, owners));
  out.dir_exists = out.pinned != nullptr;
  if (out.db.present)
    KILN_TRY(check_file_rules(path, path, out.db_stat, owners));
  for (const char* ext : kSideFiles) {
    struct stat st;
    std::string side = path + ext;
    if (::lstat(side.c_str(), &st) != 0)
      continue;
    KILN_TRY(check_file_rules(path, side, st, owners));
    side_stamp(out, ext) = FileStamp::of(st);
  }
  return out;
}

Status check_opened_file(const std::string& path, const struct stat& st, const CacheFiles& files,
                         const TrustedOwners& owners) {
  if (files.db.present && !files.db.same_file(FileStamp::of(st)))
    return refused(path, "the file was replaced while it was being opened");
  if (files.db.present)
    return Status::ok(); // the file that was checked
  return check_file_rules(path, path, st, owners);
}

} // namespace kiln::storage
