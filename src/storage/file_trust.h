// Whether a cache's files may be believed, checked before SQLite reads a
// byte of them (as OpenSSH's StrictModes and git's safe.directory do): a
// cache holds code that whoever loads from it runs, and SQLite replays a WAL
// or a hot journal it finds beside the file, so the file, its side files
// (SQLite's -wal, -shm and -journal; Kiln's -images and -loads) and the
// directory holding them must be owned by someone the reader trusts and
// writable by no one else. The rules are
// listed in README.md ("Trust").
#pragma once

#include <kiln/result.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <sys/types.h>
#include <vector>

namespace kiln::storage {

/// The owners whose files are trusted: this process's effective user, root,
/// and the users $KILN_TRUSTED_OWNERS names.
struct TrustedOwners {
  std::vector<uid_t> extra; ///< from $KILN_TRUSTED_OWNERS
  bool any = false;         ///< "*": every check is off

  bool trusts(uid_t uid) const;
  /// A list of user names or uids separated by commas or spaces; "*" alone
  /// trusts every file. A name that is not a user is `invalid_argument`.
  static Result<TrustedOwners> parse(std::string_view list);
  /// parse($KILN_TRUSTED_OWNERS), remembered while the variable is unchanged
  /// (a name costs a user database lookup). Thread-safe.
  static Result<TrustedOwners> from_env();
};

/// A file's identity and state, to tell later whether it changed.
struct FileStamp {
  bool present = false;
  uint64_t dev = 0, ino = 0;
  int64_t size = 0, mtime_ns = 0;

  static FileStamp of(const struct stat& st);
  /// lstat of `path`; not present if it cannot be stat'ed.
  static FileStamp at(const std::string& path);
  bool same_file(const FileStamp& o) const {
    return present && o.present && dev == o.dev && ino == o.ino;
  }
  bool operator==(const FileStamp&) const = default;
};

/// A directory held open (O_PATH) after every directory from `/` down to it
/// passed the rules: the directory checked is the one used, for as long as
/// this lives, whatever is renamed above it meanwhile.
class PinnedDir {
public:
  explicit PinnedDir(int fd) : fd_(fd) {}
  ~PinnedDir();
  PinnedDir(const PinnedDir&) = delete;
  PinnedDir& operator=(const PinnedDir&) = delete;
  int fd() const { return fd_; }
  /// `name` in this directory, as a path any open() resolves through the
  /// held descriptor ("/proc/self/fd/N/name"), or "" where /proc is not
  /// mounted.
  std::string path_of(const std::string& name) const;

private:
  int fd_;
};

/// The cache's files as check_cache_files found them.
struct CacheFiles {
  std::string dir; ///< the directory holding them
  /// That directory, held open once its whole chain passed (null when it
  /// does not exist yet).
  std::shared_ptr<const PinnedDir> pinned;
  FileStamp db;    ///< the cache file (not present: it does not exist yet)
  struct stat db_stat {};
  bool dir_exists = false;
  FileStamp wal, shm, journal; ///< the side files (not present: none)
  /// Kiln's own side files: published images and the load log
  /// (storage/published/published.h), under the same rules.
  FileStamp images, loads;
};

/// Checks every directory from `/` down to `dir` (OpenSSH's rule: owned by
/// a trusted owner and writable by no one else, unless sticky with the entry
/// below it trusted; `dir` itself never writable by others), following a
/// symbolic link only where its owner is trusted or no one else could have
/// put it there, and holds `dir` open. Then checks the cache file at `path`,
/// each of its side files present and the directory `dir` holding them, without opening any of them (closing a
/// descriptor would drop this process's SQLite locks on the file). A
/// symbolic link at `path` is refused. A file or directory that fails the
/// rules is `unavailable`, with a message naming it, its owner (uid and
/// name) and mode (octal), and what to do. A missing file or directory is
/// not an error (db.present / dir_exists tell).
Result<CacheFiles> check_cache_files(const std::string& path, const std::string& dir,
                                     const TrustedOwners& owners);

/// Checks a cache file Kiln just opened or created (fstat of its descriptor)
/// by the same rules: a file another user created at the same name between
/// the check and the creation is refused.
Status check_opened_file(const std::string& path, const struct stat& st, const CacheFiles& files,
                         const TrustedOwners& owners);

} // namespace kiln::storage
