// The cache file's database part (storage/local/database.h): the file's
// trust and header checks before SQLite reads it, the connection and its
// pragmas, migrations, statements, transactions, the WAL at close, and the
// fault-injecting VFS.
#include "storage/local/database.h"

#include "storage/local/statement.h"
#include "storage/published/published.h"

#include "core/keys.h"

#include "support/fault.h"
#include "support/files.h"
#include "support/zstd_api.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::storage {

namespace {

struct Migration {
  int version;
  const char* sql;
};

// Generated from schema/NNNN_*.sql at build time, in version order.
#include "kiln_schema.inc"

// 'KILN' in ASCII: marks a file as a Kiln cache, so that a foreign SQLite
// database is refused rather than migrated.
constexpr int kApplicationId = 0x4B494C4E;

// --- fault injection: a VFS that wraps the default one -----------------------
// Installed only when $KILN_FAULT names an SQLite point, so that the writes
// SQLite itself makes (pages, WAL frames, journal) can fail exactly as a
// failing or full disk would make them fail, under SQLite's own recovery.

struct FaultFile {
  sqlite3_file base;
  sqlite3_file* real; // lives right after this struct, in the same allocation
};

sqlite3_vfs* g_default_vfs = nullptr;

sqlite3_file* real_of(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f)->real; }

int fault_write(sqlite3_file* f, const void* data, int n, sqlite3_int64 off) {
  if (fault::hit("disk-full"))
    return SQLITE_FULL;
  if (fault::hit("sqlite-write"))
    return SQLITE_IOERR_WRITE;
  return real_of(f)->pMethods->xWrite(real_of(f), data, n, off);
}
int fault_sync(sqlite3_file* f, int flags) {
  if (fault::hit("sqlite-sync"))
    return SQLITE_IOERR_FSYNC;
  return real_of(f)->pMethods->xSync(real_of(f), flags);
}
int fault_close(sqlite3_file* f) { return real_of(f)->pMethods->xClose(real_of(f)); }
int fault_read(sqlite3_file* f, void* d, int n, sqlite3_int64 o) {
  return real_of(f)->pMethods->xRead(real_of(f), d, n, o);
}
int fault_truncate(sqlite3_file* f, sqlite3_int64 size) {
  return real_of(f)->pMethods->xTruncate(real_of(f), size);
}
int fault_file_size(sqlite3_file* f, sqlite3_int64* size) {
  return real_of(f)->pMethods->xFileSize(real_of(f), size);
}
int fault_lock(sqlite3_file* f, int l) { return real_of(f)->pMethods->xLock(real_of(f), l); }
int fault_unlock(sqlite3_file* f, int l) { return real_of(f)->pMethods->xUnlock(real_of(f), l); }
int fault_check_lock(sqlite3_file* f, int* out) {
  return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}
int fault_control(sqlite3_file* f, int op, void* arg) {
  return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}
int fault_sector_size(sqlite3_file* f) { return real_of(f)->pMethods->xSectorSize(real_of(f)); }
int fault_device(sqlite3_file* f) {
  return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}
int fault_shm_map(sqlite3_file* f, int pg, int size, int extend, void volatile** out) {
  return real_of(f)->pMethods->xShmMap(real_of(f), pg, size, extend, out);
}
int fault_shm_lock(sqlite3_file* f, int off, int n, int flags) {
  return real_of(f)->pMethods->xShmLock(real_of(f), off, n, flags);
}
void fault_shm_barrier(sqlite3_file* f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); }
int fault_shm_unmap(sqlite3_file* f, int del) {
  return real_of(f)->pMethods->xShmUnmap(real_of(f), del);
}
int fault_fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  return real_of(f)->pMethods->xFetch(real_of(f), off, n, out);
}
int fault_unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return real_of(f)->pMethods->xUnfetch(real_of(f), off, p);
}

// Every method but the write and sync ones forwards to the real file.
const sqlite3_io_methods kFaultMethods = {
    3,           fault_close,      fault_read,        fault_write,      fault_truncate,
    fault_sync,  fault_file_size,  fault_lock,        fault_unlock,     fault_check_lock,
    fault_control, fault_sector_size, fault_device,   fault_shm_map,    fault_shm_lock,
    fault_shm_barrier, fault_shm_unmap, fault_fetch,  fault_unfetch,
};

int fault_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
  auto* ff = reinterpret_cast<FaultFile*>(f);
  ff->real = reinterpret_cast<sqlite3_file*>(ff + 1);
  ff->base.pMethods = nullptr;
  int rc = g_default_vfs->xOpen(g_default_vfs, name, ff->real, flags, out);
  // The wrapper's methods only where the real file has them (SQLite closes
  // a file whose pMethods is set, even after a failed open).
  if (ff->real->pMethods)
    ff->base.pMethods = &kFaultMethods;
  return rc;
}

sqlite3_vfs* fault_vfs() {
  static sqlite3_vfs vfs;
  static std::once_flag once;
  std::call_once(once, [] {
    g_default_vfs = sqlite3_vfs_find(nullptr);
    vfs = *g_default_vfs;
    vfs.szOsFile = int(sizeof(FaultFile)) + g_default_vfs->szOsFile;
    vfs.zName = "kiln-fault";
    vfs.pNext = nullptr;
    vfs.xOpen = fault_open;
    sqlite3_vfs_register(&vfs, /*makeDflt=*/0);
  });
  return &vfs;
}

bool faults_planned() {
  return fault::planned("sqlite-write") || fault::planned("disk-full") ||
         fault::planned("sqlite-sync");
}


// --- the pinned VFS: SQLite's files opened through the checked directory -----
// SQLite opens the cache file by name, and its -journal and -wal by names
// made from it, each at its own moment. The names it is given here lead
// through the cache's directory held open ("/proc/self/fd/N/c.db": whatever
// is renamed above it, they resolve to the directory that was checked), and
// this VFS keeps them that way (the default one would resolve the link back
// to a path), and checks each file that already exists on a descriptor of
// it before SQLite opens it: the rules of file_trust.h, and one link only.
// A file that fails is not opened (SQLITE_CANTOPEN), so a journal or WAL
// that is not trusted is never replayed, and root's SQLite never fchown()s
// it to the cache's owner (which it does to a journal or WAL it opens).

constexpr char kPinnedPrefix[] = "/proc/self/fd/";

// Why the last open on this thread was refused, for the error SQLite's
// "unable to open database file" becomes (Database::db_error).
thread_local std::string t_refusal;

bool pinned_name(const char* name, int& dirfd, const char*& base) {
  if (!name || std::strncmp(name, kPinnedPrefix, sizeof kPinnedPrefix - 1) != 0)
    return false;
  const char* p = name + sizeof kPinnedPrefix - 1;
  char* end = nullptr;
  long fd = std::strtol(p, &end, 10);
  if (end == p || *end != '/' || fd < 0 || fd > 1 << 30)
    return false;
  dirfd = int(fd);
  base = end + 1;
  return *base != '\0' && std::strchr(base, '/') == nullptr;
}

std::string refusal_text(const char* base, const struct stat& st, const char* why) {
  return std::string("'") + base + "' (owner uid " + std::to_string(st.st_uid) + ", mode " +
         std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
         std::to_string(st.st_mode & 7) + ") " + why;
}

// The file `base` of the directory `dirfd`, if it exists: trusted? Looked
// at with fstatat on the held directory, never through a descriptor of the
// file itself: closing one would drop every POSIX lock this process holds on
// it (another connection's, in SQLite). Nothing can change the name between
// this look and SQLite's open: no one this process does not trust can
// write the directory (file_trust.h).
bool trusted_on_descriptor(int dirfd, const char* base, bool side_file) {
  struct stat st;
  if (::fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT)
      return true; // SQLite creates it, in a directory no one else can write
    t_refusal = std::string("'") + base + "' cannot be checked: " + std::strerror(errno);
    return false;
  }
  bool got = true;
  auto owners = TrustedOwners::from_env();
  if (!got || !owners) {
    t_refusal = std::string("'") + base + "' cannot be checked";
    return false;
  }
  if (owners->any)
    return true;
  const char* why = nullptr;
  if (S_ISLNK(st.st_mode))
    why = "is a symbolic link, which is never followed";
  else if (!S_ISREG(st.st_mode))
    why = "is not a regular file";
  else if (!owners->trusts(st.st_uid))
    why = "belongs to an owner this process does not trust: it is not opened, and a journal "
          "or WAL of it is never replayed";
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    why = "is writable by group or others";
  else if (side_file && st.st_nlink != 1)
    why = "has more than one link: a journal or WAL is SQLite's alone, and another name of it "
          "may be another user's";
  if (!why)
    return true;
  t_refusal = refusal_text(base, st, why);
  return false;
}

sqlite3_vfs* real_vfs() { return faults_planned() ? fault_vfs() : g_default_vfs; }

int pinned_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
  int dirfd = -1;
  const char* base = nullptr;
  constexpr int kChecked = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL;
  if ((flags & kChecked) && pinned_name(name, dirfd, base) &&
      !trusted_on_descriptor(dirfd, base, !(flags & SQLITE_OPEN_MAIN_DB))) {
    f->pMethods = nullptr;
    return SQLITE_CANTOPEN;
  }
  sqlite3_vfs* real = real_vfs();
  return real->xOpen(real, name, f, flags, out);
}

int pinned_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) {
  int dirfd = -1;
  const char* base = nullptr;
  if (!pinned_name(name, dirfd, base))
    return g_default_vfs->xFullPathname(g_default_vfs, name, n, out);
  size_t len = std::strlen(name);
  if (len + 1 > size_t(n))
    return SQLITE_CANTOPEN;
  std::memcpy(out, name, len + 1);
  return SQLITE_OK;
}

sqlite3_vfs* pinned_vfs() {
  static sqlite3_vfs vfs;
  static std::once_flag once;
  std::call_once(once, [] {
    sqlite3_vfs* fault = fault_vfs(); // registers it, and finds the default
    vfs = *g_default_vfs;
    vfs.szOsFile = std::max(g_default_vfs->szOsFile, fault->szOsFile);
    vfs.zName = "kiln-pinned";
    vfs.pNext = nullptr;
    vfs.xOpen = pinned_open;
    vfs.xFullPathname = pinned_full_pathname;
    sqlite3_vfs_register(&vfs, /*makeDflt=*/0);
  });
  return &vfs;
}

// Whether the last error of `db` may be a full disk: SQLite's own, or an I/O
// error (extending the shared memory on a full disk is one).
bool disk_full(sqlite3* db) {
  int rc = sqlite3_errcode(db) & 0xff;
  return rc == SQLITE_FULL || rc == SQLITE_IOERR;
}

// A network file system's notice, once per process whatever the caches.
void network_notice(const std::string& path, const std::string& kind) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "kiln: cache '%s' is on a network file system (%s): using a rollback journal "
                 "without memory mapping instead of WAL\n",
                 path.c_str(), kind.c_str());
  });
}

std::string file_uri(const std::string& path);

// The first `n` bytes of the file at `path` and its size, read through
// SQLite's own descriptor of it: closing a descriptor drops every POSIX lock
// the process holds on the file, and SQLite keeps one open when another
// connection in the process (whichever copy of Kiln opened it) holds locks.
// Nothing is read through a lock, and nothing is created. False if the file
// cannot be opened (SQLite's real open then reports why).
bool read_head(const std::string& path, unsigned char* out, int n, int64_t& size,
               bool& short_read) {
  sqlite3* probe = nullptr;
  std::string uri = file_uri(path) + "?mode=ro";
  int rc = sqlite3_open_v2(uri.c_str(), &probe,
                           SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW, nullptr);
  sqlite3_file* f = nullptr;
  bool ok = rc == SQLITE_OK &&
            sqlite3_file_control(probe, "main", SQLITE_FCNTL_FILE_POINTER, &f) == SQLITE_OK && f &&
            f->pMethods;
  if (ok) {
    sqlite3_int64 sz = 0;
    ok = f->pMethods->xFileSize(f, &sz) == SQLITE_OK;
    size = sz;
    if (ok) {
      rc = f->pMethods->xRead(f, out, n, 0);
      short_read = rc == SQLITE_IOERR_SHORT_READ;
      ok = rc == SQLITE_OK || short_read;
    }
  }
  sqlite3_close_v2(probe);
  return ok;
}

// Before SQLite reads the file: a non-empty file must be an SQLite database,
// and one whose header claims more pages than it holds was truncated (or is
// still being copied; only meaningful without a WAL holding newer pages).
// `wal_format` tells whether the header says WAL mode.
//
// A writer in rollback-journal mode (network file systems) writes page 1,
// with the new page count, before the pages that extend the file, and keeps
// its -journal until they are all written: a short file seen while a
// -journal exists is a commit in progress, and one seen after the journal
// went is read again.
Status check_file(const std::string& path, bool& wal_format) {
  constexpr int kReads = 3;
  for (int attempt = 1;; ++attempt) {
    unsigned char h[100];
    int64_t size = 0;
    bool short_read = false;
    if (!read_head(path, h, sizeof h, size, short_read))
      return Status::ok(); // SQLite's own open reports it
    // SQLite reports a one-byte file as empty: its bytes tell.
    if (size == 0 && std::all_of(h, h + sizeof h, [](unsigned char c) { return c == 0; }))
      return Status::ok(); // a new cache
    // SQLite takes a file shorter than its header for an empty database and
    // would write a new one over it: refuse anything that is not a database.
    if (short_read || std::memcmp(h, "SQLite format 3", 16) != 0)
      return make_error(Code::corrupt, "'" + path + "' is not a Kiln cache (not an SQLite "
                                       "database); refusing to use it");
    wal_format = h[18] == 2 && h[19] == 2;
    struct stat wal;
    if (::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0)
      return Status::ok();
    uint32_t page_size = (uint32_t(h[16]) << 8) | h[17];
    if (page_size == 1)
      page_size = 65536;
    auto be32 = [&](int off) {
      return (uint32_t(h[off]) << 24) | (uint32_t(h[off + 1]) << 16) |
             (uint32_t(h[off + 2]) << 8) | uint32_t(h[off + 3]);
    };
    uint32_t pages = be32(28);
    // The in-header size is valid only when the change counter matches
    // "version-valid-for" (SQLite's rule); otherwise SQLite uses the file size.
    if (pages == 0 || be32(24) != be32(92))
      return Status::ok();
    if (uint64_t(size) >= uint64_t(pages) * page_size)
      return Status::ok();
    struct stat journal;
    if (::stat((path + "-journal").c_str(), &journal) == 0 && journal.st_size > 0)
      return Status::ok(); // a commit in progress, or a hot journal SQLite rolls back
    if (attempt == kReads)
      return make_error(Code::corrupt, "cache '" + path + "' is truncated: its header says " +
                                           std::to_string(uint64_t(pages) * page_size) +
                                           " bytes, the file has " + std::to_string(size) +
                                           "; refusing to use it");
  }
}

// The cache files this process has open through SQLite, by (device, inode).
struct OpenFiles {
  std::mutex mu;
  std::map<std::pair<uint64_t, uint64_t>, int> count;
};

OpenFiles& open_files() {
  static OpenFiles* f = new OpenFiles(); // outlives static Stores' destructors
  return *f;
}

bool read_only_requested() {
  const char* v = std::getenv("KILN_READ_ONLY");
  return v && *v && std::strcmp(v, "0") != 0;
}

// An open for writing refused for want of permission, not for a fault.
bool unwritable(int err) { return err == EACCES || err == EROFS || err == EPERM; }

// The directory holding `path`.
std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// Whether SQLite can create or write the -wal and -shm files beside `path`.
bool side_files_writable(const std::string& path, const std::string& dir) {
  if (::access(dir.c_str(), W_OK) == 0)
    return true;
  for (const char* ext : {"-wal", "-shm"})
    if (::access((path + ext).c_str(), W_OK) != 0)
      return false;
  return true;
}

// A path as an SQLite URI: '?', '#' and '%' escaped; an absolute path
// after an empty authority ("file:///..."), so that one starting "//" is
// not taken for an authority.
std::string file_uri(const std::string& path) {
  std::string out = !path.empty() && path.front() == '/' ? "file://" : "file:";
  for (char c : path) {
    if (c == '?' || c == '#' || c == '%') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", unsigned(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace

int schema_version() { return kMigrations[sizeof kMigrations / sizeof kMigrations[0] - 1].version; }

namespace {
// The first migration is the baseline, which makes every table of a new
// file; a file of an older version (one before the first release) is not
// migrated but refused.
int baseline_version() { return kMigrations[0].version; }

Error before_baseline(const std::string& path, int version) {
  return make_error(Code::unavailable,
                    "cache '" + path + "' has schema version " + std::to_string(version) +
                        ", from a Kiln before its first release, which this Kiln (schema " +
                        std::to_string(schema_version()) +
                        ") does not convert; a cache holds only what can be compiled again: "
                        "remove it (with its '-images' file beside it) and precompile again");
}
} // namespace

Error Database::read_only_error(const std::string& what) const {
  return make_error(Code::unavailable, "cache '" + path_ + "' is read-only (" + read_only_reason_ +
                                           "): cannot " + what);
}

Error Database::db_error(const std::string& what) const {
  int rc = sqlite3_errcode(db_);
  if ((rc & 0xff) == SQLITE_READONLY)
    return read_only_error(what + " (" + sqlite3_errmsg(db_) + ")");
  if ((rc & 0xff) == SQLITE_CANTOPEN && !t_refusal.empty()) {
    std::string why = std::move(t_refusal);
    t_refusal.clear();
    return make_error(Code::unavailable, "refusing cache '" + path_ + "': " + what + ": " + why);
  }
  Code code = (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) ? Code::corrupt : Code::internal;
  return make_error(code, "cache '" + path_ + "': " + what + ": " + sqlite3_errmsg(db_));
}

Status Database::exec(const char* sql) {
  if (read_only_ && std::strncmp(sql, "BEGIN IMMEDIATE", 15) == 0)
    return read_only_error("write to it");
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return db_error(std::string("'") + sql + "' failed (" + m + ")");
  }
  return Status::ok();
}

Result<sqlite3_stmt*> Database::prepare(const char* sql) {
  // Statements are keyed by the literal's address: every call site passes a
  // string literal, so this is a cheap exact cache.
  for (auto& [k, s] : stmts_)
    if (k == sql)
      return s;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
    return db_error("cannot prepare a statement");
  stmts_.emplace_back(sql, s);
  return s;
}

Database::~Database() {
  for (auto& [k, s] : stmts_)
    sqlite3_finalize(s);
  {
    std::lock_guard lock(open_files().mu);
    if (db_)
      sqlite3_close_v2(db_);
    if (registered_ && --open_files().count[file_id_] == 0)
      open_files().count.erase(file_id_);
  }
  // The close copied the WAL's frames into the file, or removed the WAL:
  // what the file holds is as it was (close_wal took the hold).
  renew_published();
}

void Database::renew_published() {
  // Called from destructors: out of memory, they stay stale (loads read
  // this file until the next publication).
  try {
    if (held_)
      held_->renew();
  } catch (...) {
  }
  held_.reset();
}

namespace {

// SQLite's page cache starts each connection with a block for 20 pages of
// the default size, 86 KB written through at a load's first read: about 37
// page faults, a tenth of a fresh loading process's. Without it, pages are
// allocated as they are read (a load reads a few dozen 1 KiB pages).
// Memory statistics off: with them, every allocation SQLite makes takes a
// process-wide mutex and asks malloc for the block's size, and parsing the
// schema and a load's statements allocates a few thousand times (9% of a
// fresh loading process's instructions). Kiln reads none of those figures.
// Process settings; where SQLite is already in use they are left as they
// are.
void configure_sqlite_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, nullptr, 0, 0);
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  });
}

} // namespace

Result<std::unique_ptr<Database>> Database::open(const std::string& path, OpenMode mode) {
  KILN_TRY(load_sqlite());
  KILN_TRY(load_zstd()); // the codec's, for every blob read or written
  configure_sqlite_once();
  std::unique_ptr<Database> st(new Database());
  st->path_ = path;
  std::string dir = dir_of(path);
  if (mode == OpenMode::read_only) {
    st->read_only_ = true;
    st->read_only_reason_ = "opened read-only";
  } else if (mode == OpenMode::automatic && read_only_requested()) {
    st->read_only_ = true;
    st->read_only_reason_ = "KILN_READ_ONLY is set";
  }
  if (!st->read_only_ && dir != "." && dir != "/")
    if (Status made = make_dirs(dir); !made) {
      if (mode == OpenMode::read_write || ::access(path.c_str(), F_OK) != 0)
        return made.error();
    }
  KILN_TRY_ASSIGN(auto owners, TrustedOwners::from_env());
  CacheFiles opened; // as checked, for a second connect (a full disk)
  KILN_TRY(st->connect_checked(mode, dir, owners, &opened));
  KILN_TRY_ASSIGN(Header header, st->read_header(opened, owners));
  KILN_TRY(st->check_header(header));
  if (st->read_only_) {
    if (!network_fs_kind(path).empty())
      KILN_TRY(st->exec("PRAGMA mmap_size=0"));
    KILN_TRY(st->exec("PRAGMA foreign_keys=ON"));
    return st;
  }
  KILN_TRY(st->set_journal_mode(header.objects == 0));
  if (header.user_version < schema_version())
    KILN_TRY(st->migrate());
  if (header.objects == 0 && st->wal_)
    (void)st->keep_reserve();
  return st;
}

// Trusts, creates if it must, and connects to the file, registered as open
// in this process; `opened`: the files as checked.
Status Database::connect_checked(OpenMode mode, const std::string& dir,
                                 const TrustedOwners& owners, CacheFiles* opened) {
  const std::string& path = path_;
  // Closing any descriptor of a file drops every POSIX lock this process
  // holds on it, SQLite's included: the file is opened here outside SQLite
  // only while no connection of this process has it open, and the check
  // and the connection's registration happen under one lock.
  std::lock_guard lock(open_files().mu);
  // Trusted before anything reads it (storage/file_trust.h).
  KILN_TRY_ASSIGN(CacheFiles files, check_cache_files(path, dir, owners));
  bool exists = files.db.present;
  bool ours = exists && open_files().count.count({files.db.dev, files.db.ino});
  if (!read_only_ && !ours && !exists) {
    KILN_TRY_ASSIGN(exists, create_file(dir, owners, &files));
  }
  if (!read_only_ && exists && ::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0) {
    int err = errno;
    if (mode != OpenMode::automatic || !unwritable(err))
      return make_error(Code::unavailable,
                        "cannot open cache '" + path + "': " + std::strerror(err));
    read_only_ = true;
    read_only_reason_ = std::string("the file is not writable: ") + std::strerror(err);
  }
  // A writable file in a directory that cannot take the WAL's side files
  // (another user's directory, a read-only mount) is read as it is.
  if (!read_only_ && mode == OpenMode::automatic && !side_files_writable(path, dir)) {
    read_only_ = true;
    read_only_reason_ = "its directory is not writable";
  }
  if (read_only_ && !exists)
    return make_error(Code::not_found, "no cache at '" + path + "' (" + read_only_reason_ +
                                           ": nothing is created)");
  bool wal_format = true; // unknown when open here already: assume the worst
  if (!ours)
    KILN_TRY(check_file(path, wal_format));
  KILN_TRY(connect(files, wal_format, owners));
  // SQLite opened the file by its name in the held directory: it must be
  // the one checked.
  struct stat now;
  std::string base = path.substr(path.rfind('/') + 1);
  int at = files.pinned ? files.pinned->fd() : AT_FDCWD;
  if (::fstatat(at, files.pinned ? base.c_str() : path.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 ||
      !files.db.same_file(FileStamp::of(now)))
    return make_error(Code::unavailable,
                      "refusing cache '" + path + "': the file was replaced while it was opened");
  file_id_ = {uint64_t(now.st_dev), uint64_t(now.st_ino)};
  *opened = files;
  ++open_files().count[file_id_];
  registered_ = true;
  return Status::ok();
}

// Creates a new cache file with owner-only permissions: it holds code that
// will be run by whoever loads from it. Never through a link, and only a new
// file: this process's own descriptor is opened and closed on no file that
// a connection may hold locks on. Whether the file exists now (another
// process may have made it meanwhile: it is then trusted like any other).
Result<bool> Database::create_file(const std::string& dir, const TrustedOwners& owners,
                                   CacheFiles* files) {
  int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int err = errno;
  if (fd >= 0) {
    struct stat made;
    Status trusted = ::fstat(fd, &made) == 0 ? check_opened_file(path_, made, *files, owners)
                                             : Status(make_error(Code::unavailable, "fstat"));
    ::close(fd);
    KILN_TRY(trusted);
    files->db = FileStamp::of(made);
    files->db_stat = made;
    return true;
  }
  if (err == EEXIST) {
    KILN_TRY_ASSIGN(*files, check_cache_files(path_, dir, owners));
    return files->db.present;
  }
  return make_error(Code::unavailable,
                    "cannot create cache '" + path_ + "': " + std::strerror(err));
}

// Identifies the file before changing anything in it: a non-database or a
// foreign database must be left exactly as it was.
Result<Database::Header> Database::read_header(const CacheFiles& opened,
                                               const TrustedOwners& owners) {
  Header h;
  auto read_int = [&](const char* sql, int* out) -> Status {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
      return db_error("cannot read the cache header");
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW)
      *out = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
      return db_error("cannot read the cache header");
    return Status::ok();
  };
  // One read transaction: another process may be migrating the same new
  // file, and the three reads must see one state of it.
  Status s1 = exec("BEGIN");
  if (s1)
    s1 = read_int("PRAGMA application_id", &h.app_id);
  // A full disk has no room for the shared memory's pages or the WAL's
  // first frames: the reserve kept for gc is given back, and the file is
  // opened again (gc then shrinks it; keep_reserve).
  if (!s1 && disk_full(db_) && release_reserve()) {
    (void)exec("ROLLBACK");
    std::lock_guard lock(open_files().mu);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    KILN_TRY(connect(opened, true, owners));
    s1 = exec("BEGIN");
    if (s1)
      s1 = read_int("PRAGMA application_id", &h.app_id);
  }
  if (!s1) {
    (void)exec("ROLLBACK");
    return make_error(Code::corrupt, "'" + path_ + "' is not a Kiln cache (" +
                                         s1.error().message + ")");
  }
  Status s2 = read_int("PRAGMA user_version", &h.user_version);
  if (s2)
    s2 = read_int("SELECT count(*) FROM sqlite_master", &h.objects);
  if (s2 && h.objects > 0 && h.app_id != kApplicationId)
    s2 = read_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                  "('blobs', 'files', 'groups', 'recency')",
                  &h.triton_tables);
  (void)exec("COMMIT");
  if (!s2)
    return s2.error();
  return h;
}

// Refuses, before anything is written to it, a file that is not a Kiln
// cache or whose schema this Kiln cannot use.
Status Database::check_header(const Header& h) const {
  const std::string& path = path_;
  // Triton's cache as kiln.triton keeps it is the likeliest such file
  // beside a Kiln cache: the refusal says where its commands are.
  if (h.objects > 0 && h.app_id != kApplicationId && h.triton_tables == 4)
    return make_error(Code::corrupt,
                      "'" + path + "' is a Triton cache kept by kiln.triton, not a Kiln cache; "
                      "inspect it with 'python -m kiln.triton --cache " + path +
                      " ls|verify|gc|export' (the kiln-inspect that pip installs forwards to it)");
  if (h.objects > 0 && h.app_id != kApplicationId)
    return make_error(Code::corrupt,
                      "'" + path + "' is an SQLite database but not a Kiln cache; refusing to use it");
  if (h.user_version > 0 && h.user_version < baseline_version())
    return before_baseline(path, h.user_version);
  if (h.user_version > schema_version())
    return make_error(Code::unavailable,
                      "cache '" + path + "' has schema version " + std::to_string(h.user_version) +
                          ", newer than this Kiln's " + std::to_string(schema_version()) +
                          "; use a newer Kiln or another cache");
  if (!read_only_)
    return Status::ok();
  if (h.objects == 0)
    return make_error(Code::not_found, "cache '" + path + "' is empty (" + read_only_reason_ +
                                           ": nothing is created)");
  if (h.user_version < schema_version())
    return make_error(Code::unavailable,
                      "cache '" + path + "' has schema version " + std::to_string(h.user_version) +
                          ", older than this Kiln's " + std::to_string(schema_version()) +
                          ", and is read-only (" + read_only_reason_ +
                          "): it cannot be migrated; open it once writable to migrate it");
  return Status::ok();
}

// WAL keeps its index in shared memory (an mmap'd -shm file), which network
// file systems do not keep coherent between machines (and which raises
// SIGBUS when the server drops it): there, a rollback journal and plain
// reads. A WAL cache moved onto one is converted at this open. Then the
// pragmas of every writable connection.
Status Database::set_journal_mode(bool new_file) {
  const std::string& path = path_;
  std::string network = network_fs_kind(path);
  const char* journal = network.empty() ? "PRAGMA journal_mode=WAL" : "PRAGMA journal_mode=DELETE";
  if (!network.empty()) {
    network_notice(path, network);
    KILN_TRY(exec("PRAGMA mmap_size=0"));
  }
  // The mode is persistent: switch only when the file is in another one (a
  // new file, or a cache that moved), since the switch needs a moment of
  // exclusive access that busy writers can deny for long. The reads before
  // made SQLite look at the file, so the current mode is known.
  std::string current;
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA journal_mode", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      current = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
  }
  bool switch_mode = new_file || current != (network.empty() ? "wal" : "delete");
  if (new_file) {
    // A new file, before anything is written to it (the journal mode
    // switch writes its header, and fixes both for good): small pages,
    // since every table and index takes at least one even when empty, and
    // freed pages given back to the file system as gc runs.
    KILN_TRY(exec("PRAGMA page_size=1024"));
    KILN_TRY(exec("PRAGMA auto_vacuum=INCREMENTAL"));
  }
  // SQLite's busy handler does not wait for that exclusive moment: retry
  // while another opener holds it.
  for (int attempt = 0; switch_mode; ++attempt) {
    Status wal = exec(journal);
    if (wal)
      break;
    int rc = sqlite3_errcode(db_) & 0xff;
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      if (attempt < 3000) {
        ::usleep(10000);
        continue;
      }
      return wal.error().context("other processes kept cache '" + path + "' busy for 30 s in " +
                                 current + " mode; it cannot switch to " +
                                 (network.empty() ? "wal" : "a rollback journal") +
                                 " until they close it");
    }
    return wal.error();
  }
  KILN_TRY(exec("PRAGMA synchronous=NORMAL"));
  KILN_TRY(exec("PRAGMA foreign_keys=ON"));
  if (network.empty()) {
    // The WAL file stays between processes (emptied, not deleted): a short
    // process does not create it again and sync the directory for it. The
    // last connection to close after writing removes it (finish()).
    int persist = 1;
    sqlite3_file_control(db_, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    wal_ = true;
  }
  return Status::ok();
}

namespace {
std::string base_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }
} // namespace

bool Database::keep_reserve() {
  if (!pinned_ || read_only_)
    return false;
  std::string name = base_of(path_) + "-reserve";
  int fd = ::openat(pinned_->fd(), name.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return false; // there already, or no room for even its name
  bool ok = ::posix_fallocate(fd, 0, kReserveBytes) == 0;
  ::close(fd);
  if (!ok)
    ::unlinkat(pinned_->fd(), name.c_str(), 0);
  return ok;
}

bool Database::release_reserve() {
  if (!pinned_ || read_only_)
    return false;
  return ::unlinkat(pinned_->fd(), (base_of(path_) + "-reserve").c_str(), 0) == 0;
}

Status Database::connect(const CacheFiles& files, bool wal_format, const TrustedOwners& owners) {
  // SQLite creates the WAL's side files where it can, a read-only
  // connection included.
  bool can_create = !read_only_ || ::access(files.dir.c_str(), W_OK) == 0;
  // Through the directory that was checked, held for the connection's life.
  pinned_ = files.pinned;
  std::string name = pinned_ ? pinned_->path_of(path_.substr(path_.rfind('/') + 1)) : "";
  const char* vfs = nullptr;
  if (!name.empty())
    vfs = pinned_vfs()->zName;
  else if (faults_planned())
    vfs = fault_vfs()->zName;
  if (name.empty())
    name = path_;
  t_refusal.clear();
  int rc;
  if (read_only_) {
    // With the WAL's side files present, even unwritable, SQLite reads a WAL
    // database read-only, with shared locks, and sees what the WAL holds;
    // where it can, it creates them. Only a WAL database without them that
    // this process cannot create them for is read immutable: no lock,
    // nothing created, the file alone, watched for a writer (refresh()).
    immutable_ = wal_format && !(files.wal.present && files.shm.present) && !can_create;
    watch_[0] = files.db;
    watch_[1] = files.wal;
    watch_[2] = files.shm;
    std::string uri = file_uri(name) + "?mode=ro" + (immutable_ ? "&immutable=1" : "");
    rc = sqlite3_open_v2(uri.c_str(), &db_,
                         SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, vfs);
  } else {
    rc = sqlite3_open_v2(name.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, vfs);
  }
  if (rc != SQLITE_OK)
    return db_error("cannot open");
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, 30000);
  sqlite3_commit_hook(db_, &Database::before_commit, this);
  return Status::ok();
}

int Database::before_commit(void* self) {
  auto* db = static_cast<Database*>(self);
  if (db->bookkeeping_ > 0) {
    // Usage alone: the published images stay true. Held here, under the
    // write lock, if they are current, to be stamped with the files' state
    // once the commit is made (Bookkeeping's end); otherwise they stay as
    // stale as they are, and loads read this file. Nothing may be thrown
    // through SQLite's frames: out of memory, they are not held.
    if (!db->held_ && db->wal_) {
      try {
        db->held_ = PublishedHold::take(db->path_);
      } catch (...) {
      }
    }
    return 0;
  }
  // Under the write lock, before the commit is visible: a load that opens
  // the published images from now on finds none, and reads this file. One
  // that cannot be removed would be a copy of the file as it was: the
  // commit is refused (SQLite rolls it back).
  db->published_stale_ = true;
  db->held_.reset();
  try {
    std::string published = published_path(db->path_);
    if (::unlink(published.c_str()) == 0 || errno == ENOENT)
      return 0;
    std::fprintf(stderr, "kiln: cannot remove '%s' (%s): the write is rolled back\n",
                 published.c_str(), std::strerror(errno));
  } catch (...) {
    // Out of memory: the file may still be there, so the commit is refused.
  }
  return 1;
}

Result<bool> Database::refresh() {
  if (!immutable_)
    return false;
  if (FileStamp::at(path_) == watch_[0] && FileStamp::at(path_ + "-wal") == watch_[1] &&
      FileStamp::at(path_ + "-shm") == watch_[2])
    return false;
  // A statement still stepping would be finalized under its reader.
  for (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr); s; s = sqlite3_next_stmt(db_, s))
    if (sqlite3_stmt_busy(s))
      return false;
  // A writer appeared (its WAL beside the file), or the file was rewritten or
  // replaced: the file is checked again and opened as it is now.
  KILN_TRY_ASSIGN(auto owners, TrustedOwners::from_env());
  std::lock_guard lock(open_files().mu);
  KILN_TRY_ASSIGN(CacheFiles files, check_cache_files(path_, dir_of(path_), owners));
  if (!files.db.present)
    return make_error(Code::not_found, "cache '" + path_ + "' was removed while open");
  std::pair<uint64_t, uint64_t> id{files.db.dev, files.db.ino};
  bool wal_format = true;
  if (!open_files().count.count(id))
    KILN_TRY(check_file(path_, wal_format));
  for (auto& [k, stmt] : stmts_)
    sqlite3_finalize(stmt);
  stmts_.clear();
  sqlite3* old = db_;
  db_ = nullptr;
  if (Status c = connect(files, wal_format, owners); !c) {
    // Keep reading the old connection, and try again at the next read.
    if (db_)
      sqlite3_close_v2(db_);
    db_ = old;
    immutable_ = true;
    watch_[0] = FileStamp{};
    return c.error();
  }
  sqlite3_close_v2(old);
  ++reconnects_; // counted even if a setting below fails: the file may be another one
  if (!network_fs_kind(path_).empty())
    KILN_TRY(exec("PRAGMA mmap_size=0"));
  KILN_TRY(exec("PRAGMA foreign_keys=ON"));
  if (on_reconnect_)
    on_reconnect_();
  if (id != file_id_) {
    if (registered_ && --open_files().count[file_id_] == 0)
      open_files().count.erase(file_id_);
    file_id_ = id;
    ++open_files().count[file_id_];
    registered_ = true;
  }
  return true;
}

void Database::defer_checkpoint() {
  deferred_ = true;
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
}

void Database::end_deferral() {
  if (!deferred_)
    return;
  deferred_ = false;
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
}

bool Database::wrote() const { return migrated_ || sqlite3_total_changes64(db_) > 0; }

Status Database::finish(bool read_host_root, const std::function<Status(const Owed&)>& settle) {
  Status done = Status::ok();
  if (!read_only_) {
    Owed owed;
    owed.compact = wrote() && !deferred_;
    owed.publish = wal_ && (published_stale_ || (read_host_root && !published_current(path_)));
    done = settle(owed);
  }
  close_wal();
  return done;
}

void Database::close_wal() {
  if (!db_ || read_only_ || !wal_)
    return;
  // Frames in the WAL may be copied into the file below or at the close
  // (the last connection's checkpoint), and the WAL removed: published
  // images current now are stamped anew after it (~Database).
  if (!held_ && FileStamp::at(path_ + "-wal").size > 0)
    held_ = PublishedHold::take(path_);
  bool wrote = this->wrote();
  // A loader that wrote leaves its frames for the next writer (no fsync
  // here); any other connection, when it is the last one open, checkpoints
  // and removes the -wal and -shm files. So does a loader that wrote
  // nothing, since there is nothing to sync then.
  bool quiet = !deferred_ || migrated_;
  if (!quiet) {
    struct stat wal;
    quiet = ::stat((path_ + "-wal").c_str(), &wal) != 0 || wal.st_size == 0;
    // But the first connection of a new process reads every frame of the
    // WAL to rebuild its index (and counts none as copied into the file):
    // loaders' frames must not pile up. The loader that finds more than
    // kLoaderWalBytes copies them into the file and empties the WAL (three
    // syncs, about once per sixty loader processes). It waits for nobody:
    // with another process reading or writing, it leaves them.
    if (!quiet && wrote && wal.st_size > kLoaderWalBytes) {
      sqlite3_busy_timeout(db_, 0);
      (void)sqlite3_wal_checkpoint_v2(db_, "main", SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    }
  }
  if (!quiet)
    return;
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
  // A cache other users may read keeps its side files, the WAL emptied:
  // their read-only opens then read through them, which a writer arriving
  // later does not disturb. Without them they read the file as immutable.
  struct stat db;
  if (::stat(path_.c_str(), &db) == 0 && (db.st_mode & 0044) != 0) {
    (void)exec("PRAGMA journal_size_limit=0");
    return;
  }
  int persist = 0;
  sqlite3_file_control(db_, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
}

Status Database::migrate() {
  // Foreign keys are off while a migration rebuilds a table: a dropped
  // table must not cascade to the rows that refer to it. The pragma is a
  // no-op inside a transaction.
  KILN_TRY(exec("PRAGMA foreign_keys=OFF"));
  int from = 0;
  Status s = migrate_steps(&from);
  Status on = exec("PRAGMA foreign_keys=ON");
  KILN_TRY(s);
  KILN_TRY(on);
  migrated_ = true;
  // A new file made each table once (the baseline): nothing to give back.
  // Elsewhere the pages that rebuilt tables left free go back to the file
  // system (the file has auto_vacuum).
  if (from == 0)
    return Status::ok();
  return exec("PRAGMA incremental_vacuum");
}

Status Database::migrate_steps(int* from) {
  KILN_TRY(exec("BEGIN IMMEDIATE"));
  // Another process may have migrated while we waited for the write lock.
  int current = 0;
  {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &s, nullptr);
    if (sqlite3_step(s) == SQLITE_ROW)
      current = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
  }
  *from = current;
  // An older Kiln made the file its own while we waited.
  if (current > 0 && current < baseline_version()) {
    (void)exec("ROLLBACK");
    return before_baseline(path_, current);
  }
  for (const Migration& m : kMigrations) {
    if (m.version <= current)
      continue;
    Status s = exec(m.sql);
    if (!s) {
      (void)exec("ROLLBACK");
      return s.error().context("migration to schema " + std::to_string(m.version));
    }
  }
  std::string pragmas = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                        "; PRAGMA user_version=" + std::to_string(schema_version()) + ";";
  Status s = exec(pragmas.c_str());
  if (s)
    s = exec("INSERT OR REPLACE INTO meta(key, value) VALUES ('format', 'kiln-cache')");
  if (!s) {
    (void)exec("ROLLBACK");
    return s;
  }
  return exec("COMMIT");
}

Status Database::transaction(const std::function<Status()>& body) {
  if (read_only_)
    return read_only_error("write to it");
  KILN_TRY(exec("BEGIN IMMEDIATE"));
  Status s = body();
  if (s)
    s = exec("COMMIT");
  if (!s)
    (void)exec("ROLLBACK");
  return s;
}

Status Database::read_transaction(const std::function<Status()>& body) {
  // Already inside one (a caller's write transaction): it is the snapshot.
  if (!sqlite3_get_autocommit(db_))
    return body();
  KILN_TRY(refresh());
  // Prepared once: every load begins and ends one, and sqlite3_exec would
  // parse the two statements each time.
  auto step = [&](sqlite3_stmt* st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE;
  };
  KILN_TRY_ASSIGN(auto begin, prepare("BEGIN"));
  KILN_TRY_ASSIGN(auto commit, prepare("COMMIT"));
  if (!step(begin))
    return db_error("cannot begin a read transaction");
  Status s = body();
  // Ending a read transaction cannot lose anything: a failed COMMIT is
  // rolled back and the reads stand.
  if (!step(commit))
    (void)exec("ROLLBACK");
  // An immutable reader takes no lock: a writer that appeared meanwhile may
  // have moved pages under it. Read again from the file as it is now.
  if (!s && s.error().code == Code::corrupt && immutable_)
    if (auto again = refresh(); again && *again)
      return read_transaction(body);
  return s;
}

Result<DataStamp> Database::stamp() {
  KILN_TRY(refresh());
  // data_version is read in a read transaction of its own, which is where
  // SQLite notices another connection's commit (the WAL index moved).
  KILN_TRY_ASSIGN(int64_t version, count("PRAGMA data_version"));
  return DataStamp{version, sqlite3_total_changes64(db_), reconnects_};
}

Result<int64_t> Database::count(const char* sql) {
  KILN_TRY_ASSIGN(auto s, prepare(sql));
  Bound b(s);
  if (b.step() != SQLITE_ROW)
    return db_error("cannot count");
  return b.col_i64(0);
}

} // namespace kiln::storage
