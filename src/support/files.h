// File helpers: whole-file reads, commit-or-discard writes, temp dirs,
// the default cache path. Knows nothing of jobs or caches.
#pragma once

#include <kiln/result.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <string_view>

namespace kiln {

/// The whole file. One larger than `max_size` bytes is refused (`corrupt`,
/// naming both sizes) before its bytes are read, and again if it grows past
/// that while being read.
Result<std::string> read_file(const std::string& path, size_t max_size = SIZE_MAX);

/// Writes `bytes` to a temp file beside `path` and renames it over `path`:
/// readers see the old file or the new one, never a half-written one.
Status write_file_atomic(const std::string& path, std::string_view bytes);

/// Writes a scratch file that lives only for one operation (a linker's
/// input in a private temp directory): no fsync, no rename.
Status write_scratch_file(const std::string& path, std::string_view bytes);

/// Refuses (`invalid_argument`) a `path` that is the SQLite database
/// `database` or one of its side files (SQLite's -wal, -shm, -journal; Kiln's
/// -images, -loads, -reserve), so that no
/// write lands on, and no read is taken from, a live database. Existing files
/// are compared by device and inode, which catches hard links, symbolic
/// links and any spelling of the path (./db, dir/../db); a side file that
/// does not exist yet, by its directory's device and inode and its name.
/// Only stat(2): the file is never opened, since closing any descriptor of a
/// database drops its POSIX locks. `role` names the path in the message
/// ("export destination").
Status refuse_database_file(const std::string& path, const std::string& database,
                            const std::string& role);

/// Creates the directory and its parents (mode 0700 for new ones).
Status make_dirs(const std::string& dir);

/// $KILN_CACHE, else $XDG_CACHE_HOME/kiln/kiln.db, else ~/.cache/kiln/kiln.db.
Result<std::string> default_cache_path();

/// The kind of network (or user-space) file system that holds `path` (the
/// file, or its directory if the file does not exist yet): "nfs", "cifs",
/// "smb2", "fuse", "9p", "afs", "ceph", "lustre", "gpfs", ...; empty for a
/// local one. SQLite's WAL needs shared memory that such file systems do not
/// provide coherently. $KILN_NETWORK_FS overrides the answer: "0" means
/// local, any other non-empty value is taken as that file system's name.
std::string network_fs_kind(const std::string& path);

/// A private temporary directory, removed with its contents on destruction,
/// and by SIGINT, SIGTERM or SIGHUP while it lives where that signal's
/// disposition is the default (it ends the process, by that signal still);
/// a handler the program set is left alone.
class TempDir {
public:
  static Result<TempDir> create(const char* prefix = "kiln");
  TempDir(TempDir&& other) noexcept
      : path_(std::move(other.path_)), slot_(std::exchange(other.slot_, -1)) {
    other.path_.clear();
  }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

private:
  TempDir(std::string path, int slot) : path_(std::move(path)), slot_(slot) {}
  std::string path_;
  int slot_ = -1; ///< its place among those a signal removes, or -1

};

} // namespace kiln
