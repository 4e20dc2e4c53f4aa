#include "storage/local/store.h"

#include "storage/local/file_trust.h"
#include "storage/local/statement.h"

#include "core/check.h"
#include "core/keys.h"

#include "support/compress.h"
#include "support/fault.h"
#include "support/files.h"

#include <sqlite3.h>
#include <zdict.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <map>
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
bool read_head(const std::string& path, unsigned char* out, int n, int64_t& size, bool& short_read) {
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

// --- dictionaries --------------------------------------------------------------

// The level of every stored blob (zstd_compress's).
constexpr int kLevel = 9;
// Training reads at most this many plain blobs of a kind, each at most
// kMaxSampleSize, kMaxSampleBytes in all: zstd wants about a hundred times
// the dictionary's size in samples, and training time grows with them.
constexpr int kMaxSamples = 2000;
constexpr int64_t kMaxSampleSize = 128 << 10;
constexpr size_t kMaxSampleBytes = 2 << 20;
constexpr size_t kMaxDictionarySize = 16 << 10;
constexpr size_t kMinDictionarySize = 1 << 10;
// compact() recompresses at most this many raw bytes per call, so that a
// close stays short when a big cache gains its first dictionary.
constexpr int64_t kCompactBytes = 32 << 20;
constexpr int kCompactBlobs = 8192;

std::string kind_name(bool image, const std::string& format) {
  return (image ? "image " : "artifact ") + format;
}

// Every read refuses a blob over max_decoded_size() (a decompression bomb is
// indistinguishable from it), so a write refuses one too: the error names the
// setting now, instead of the stored bytes reading as damaged later.
Status check_storable(const std::string& what, size_t size) {
  if (size <= max_decoded_size())
    return Status::ok();
  return make_error(Code::invalid_argument,
                    what + " is " + std::to_string(size) + " bytes, over the " +
                        std::to_string(max_decoded_size()) +
                        "-byte maximum a cache value may decode to; raise KILN_MAX_DECODED_SIZE "
                        "(for every process that reads this cache) to store it");
}

using CompressContext = std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)>;

CompressContext compress_context() { return {ZSTD_createCCtx(), ZSTD_freeCCtx}; }

// One frame compressed with a dictionary; empty if zstd fails.
std::string compress_with(ZSTD_CCtx* cctx, const ZSTD_CDict* cdict, std::string_view raw) {
  if (!cctx)
    return {};
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress_usingCDict(cctx, out.data(), out.size(), raw.data(), raw.size(), cdict);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// Blobs to train on: concatenated, with each one's size.
struct Samples {
  std::string bytes;
  std::vector<size_t> sizes;
  int64_t stored = 0; // their stored (plain zstd) size
};

// A dictionary of at most `capacity` bytes trained on `s`; empty if zstd
// cannot make one.
std::string train(const Samples& s, size_t capacity) {
  std::string dict(capacity, '\0');
  size_t n = ZDICT_trainFromBuffer(dict.data(), dict.size(), s.bytes.data(), s.sizes.data(),
                                   unsigned(s.sizes.size()));
  if (ZDICT_isError(n))
    return {};
  dict.resize(n);
  return dict;
}

// What `dict` makes of the samples: their compressed size plus its own.
int64_t cost_with(const std::string& dict, const Samples& s) {
  ZSTD_CDict* c = ZSTD_createCDict(dict.data(), dict.size(), kLevel);
  if (!c)
    return INT64_MAX;
  int64_t total = int64_t(dict.size());
  size_t at = 0;
  CompressContext cctx = compress_context();
  for (size_t n : s.sizes) {
    std::string out = compress_with(cctx.get(), c, std::string_view(s.bytes).substr(at, n));
    total += out.empty() ? int64_t(n) : int64_t(out.size());
    at += n;
  }
  ZSTD_freeCDict(c);
  return total;
}

} // namespace

// A zstd dictionary as one connection uses it, digested for decompression
// and, once its kind's newest, for compression.
struct Dictionary {
  int64_t id = 0;
  std::string kind;
  std::string data;
  ZSTD_DDict* ddict = nullptr;
  mutable ZSTD_CDict* cdict = nullptr; ///< made under the store's lock, then only read
  Dictionary() = default;
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;
  ~Dictionary() {
    ZSTD_freeDDict(ddict);
    ZSTD_freeCDict(cdict);
  }
};

int schema_version() { return kMigrations[sizeof kMigrations / sizeof kMigrations[0] - 1].version; }

Error Store::read_only_error(const std::string& what) const {
  return make_error(Code::unavailable, "cache '" + path_ + "' is read-only (" + read_only_reason_ +
                                           "): cannot " + what);
}

Error Store::db_error(const std::string& what) const {
  int rc = sqlite3_errcode(db_);
  if ((rc & 0xff) == SQLITE_READONLY)
    return read_only_error(what + " (" + sqlite3_errmsg(db_) + ")");
  Code code = (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) ? Code::corrupt : Code::internal;
  return make_error(code, "cache '" + path_ + "': " + what + ": " + sqlite3_errmsg(db_));
}

Status Store::exec(const char* sql) {
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

Result<sqlite3_stmt*> Store::prepare(const char* sql) {
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

Store::~Store() {
  finish();
  for (auto& [k, s] : stmts_)
    sqlite3_finalize(s);
  std::lock_guard lock(open_files().mu);
  if (db_)
    sqlite3_close_v2(db_);
  if (registered_ && --open_files().count[file_id_] == 0)
    open_files().count.erase(file_id_);
}

namespace {

// SQLite's page cache starts each connection with a block for 20 pages of
// the default size, 86 KB written through at a load's first read: about 37
// page faults, a tenth of a fresh loading process's. Without it, pages are
// allocated as they are read (a load reads a few dozen 1 KiB pages). A
// process setting; where SQLite is already in use it is left as it is.
void configure_sqlite_once() {
  static std::once_flag once;
  std::call_once(once, [] { (void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, nullptr, 0, 0); });
}

} // namespace

Result<std::unique_ptr<Store>> Store::open(const std::string& path, OpenMode mode) {
  configure_sqlite_once();
  std::unique_ptr<Store> st(new Store());
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
  {
    // Closing any descriptor of a file drops every POSIX lock this process
    // holds on it, SQLite's included: the file is opened here outside SQLite
    // only while no connection of this process has it open, and the check
    // and the connection's registration happen under one lock.
    std::lock_guard lock(open_files().mu);
    // Trusted before anything reads it (storage/local/file_trust.h).
    KILN_TRY_ASSIGN(CacheFiles files, check_cache_files(path, dir, owners));
    bool exists = files.db.present;
    bool ours = exists && open_files().count.count({files.db.dev, files.db.ino});
    if (!st->read_only_ && !ours && !exists) {
      // Create a new cache file with owner-only permissions: it holds code
      // that will be run by whoever loads from it. Never through a link,
      // and only a new file: this process's own descriptor is opened and
      // closed on no file that a connection may hold locks on.
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      int err = errno;
      if (fd >= 0) {
        struct stat made;
        Status trusted = ::fstat(fd, &made) == 0 ? check_opened_file(path, made, files, owners)
                                                 : Status(make_error(Code::unavailable, "fstat"));
        ::close(fd);
        KILN_TRY(trusted);
        files.db = FileStamp::of(made);
        files.db_stat = made;
      } else if (err == EEXIST) {
        // Another process made it meanwhile: trusted like any existing file.
        KILN_TRY_ASSIGN(files, check_cache_files(path, dir, owners));
        exists = files.db.present;
      } else {
        return make_error(Code::unavailable,
                          "cannot create cache '" + path + "': " + std::strerror(err));
      }
    }
    if (!st->read_only_ && exists && ::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0) {
      int err = errno;
      if (mode != OpenMode::automatic || !unwritable(err))
        return make_error(Code::unavailable,
                          "cannot open cache '" + path + "': " + std::strerror(err));
      st->read_only_ = true;
      st->read_only_reason_ = std::string("the file is not writable: ") + std::strerror(err);
    }
    // A writable file in a directory that cannot take the WAL's side files
    // (another user's directory, a read-only mount) is read as it is.
    if (!st->read_only_ && mode == OpenMode::automatic && !side_files_writable(path, dir)) {
      st->read_only_ = true;
      st->read_only_reason_ = "its directory is not writable";
    }
    if (st->read_only_ && !exists)
      return make_error(Code::not_found, "no cache at '" + path + "' (" + st->read_only_reason_ +
                                             ": nothing is created)");
    bool wal_format = true; // unknown when open here already: assume the worst
    if (!ours)
      KILN_TRY(check_file(path, wal_format));
    KILN_TRY(st->connect(files, wal_format, owners));
    // SQLite opened the file by its name: it must be the one checked.
    struct stat now;
    if (::stat(path.c_str(), &now) != 0 || !files.db.same_file(FileStamp::of(now)))
      return make_error(Code::unavailable, "refusing cache '" + path +
                                               "': the file was replaced while it was opened");
    st->file_id_ = {uint64_t(now.st_dev), uint64_t(now.st_ino)};
    ++open_files().count[st->file_id_];
    st->registered_ = true;
  }

  // Identify the file before changing anything in it: a non-database or a
  // foreign database must be left exactly as it was.
  int app_id = 0, user_version = 0, objects = 0;
  {
    auto read_int = [&](const char* sql, int* out) -> Status {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(st->db_, sql, -1, &s, nullptr) != SQLITE_OK)
        return st->db_error("cannot read the cache header");
      int r = sqlite3_step(s);
      if (r == SQLITE_ROW)
        *out = sqlite3_column_int(s, 0);
      sqlite3_finalize(s);
      if (r != SQLITE_ROW && r != SQLITE_DONE)
        return st->db_error("cannot read the cache header");
      return Status::ok();
    };
    // One read transaction: another process may be migrating the same new
    // file, and the three reads must see one state of it.
    Status s1 = st->exec("BEGIN");
    if (s1)
      s1 = read_int("PRAGMA application_id", &app_id);
    if (!s1) {
      (void)st->exec("ROLLBACK");
      return make_error(Code::corrupt, "'" + path + "' is not a Kiln cache (" +
                                           s1.error().message + ")");
    }
    Status s2 = read_int("PRAGMA user_version", &user_version);
    if (s2)
      s2 = read_int("SELECT count(*) FROM sqlite_master", &objects);
    (void)st->exec("COMMIT");
    if (!s2)
      return s2.error();
  }
  if (objects > 0 && app_id != kApplicationId)
    return make_error(Code::corrupt,
                      "'" + path +
                          "' is an SQLite database but not a Kiln cache; refusing to use it");
  if (user_version > schema_version())
    return make_error(Code::unavailable,
                      "cache '" + path + "' has schema version " + std::to_string(user_version) +
                          ", newer than this Kiln's " + std::to_string(schema_version()) +
                          "; use a newer Kiln or another cache");
  if (st->read_only_) {
    if (objects == 0)
      return make_error(Code::not_found, "cache '" + path + "' is empty (" +
                                             st->read_only_reason_ + ": nothing is created)");
    if (user_version < schema_version())
      return make_error(Code::unavailable,
                        "cache '" + path + "' has schema version " + std::to_string(user_version) +
                            ", older than this Kiln's " + std::to_string(schema_version()) +
                            ", and is read-only (" + st->read_only_reason_ +
                            "): it cannot be migrated; open it once writable to migrate it");
    if (!network_fs_kind(path).empty())
      KILN_TRY(st->exec("PRAGMA mmap_size=0"));
    KILN_TRY(st->exec("PRAGMA foreign_keys=ON"));
    return st;
  }

  // WAL keeps its index in shared memory (an mmap'd -shm file), which
  // network file systems do not keep coherent between machines (and which
  // raises SIGBUS when the server drops it): there, a rollback journal and
  // plain reads. A WAL cache moved onto one is converted at this open.
  std::string network = network_fs_kind(path);
  const char* journal = network.empty() ? "PRAGMA journal_mode=WAL" : "PRAGMA journal_mode=DELETE";
  if (!network.empty()) {
    network_notice(path, network);
    KILN_TRY(st->exec("PRAGMA mmap_size=0"));
  }
  // The mode is persistent: switch only when the file is in another one (a
  // new file, or a cache that moved), since the switch needs a moment of
  // exclusive access that busy writers can deny for long. The reads above
  // made SQLite look at the file, so the current mode is known.
  std::string current;
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(st->db_, "PRAGMA journal_mode", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      current = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
  }
  bool switch_mode = objects == 0 || current != (network.empty() ? "wal" : "delete");
  if (objects == 0) {
    // A new file, before anything is written to it (the journal mode
    // switch writes its header, and fixes both for good): small pages,
    // since every table and index takes at least one even when empty, and
    // freed pages given back to the file system as gc runs.
    KILN_TRY(st->exec("PRAGMA page_size=1024"));
    KILN_TRY(st->exec("PRAGMA auto_vacuum=INCREMENTAL"));
  }
  // SQLite's busy handler does not wait for that exclusive moment: retry
  // while another opener holds it.
  for (int attempt = 0; switch_mode; ++attempt) {
    Status wal = st->exec(journal);
    if (wal)
      break;
    int rc = sqlite3_errcode(st->db_) & 0xff;
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
  KILN_TRY(st->exec("PRAGMA synchronous=NORMAL"));
  KILN_TRY(st->exec("PRAGMA foreign_keys=ON"));
  if (network.empty()) {
    // The WAL file stays between processes (emptied, not deleted): a short
    // process does not create it again and sync the directory for it. The
    // last connection to close after writing removes it (finish()).
    int persist = 1;
    sqlite3_file_control(st->db_, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    st->wal_ = true;
  }
  if (user_version < schema_version())
    KILN_TRY(st->migrate());
  return st;
}

Status Store::connect(const CacheFiles& files, bool wal_format, const TrustedOwners& owners) {
  // SQLite creates the WAL's side files where it can, a read-only
  // connection included.
  bool can_create = !read_only_ || ::access(files.dir.c_str(), W_OK) == 0;
  if (files.shared_dir) {
    // Others can create names there. A rollback journal is made and removed
    // at every write: one could be planted between two, and replayed.
    if (std::string network = network_fs_kind(path_); !network.empty())
      return make_error(Code::unavailable,
                        "refusing cache '" + path_ + "': it is on a network file system (" +
                            network + "), where it keeps a rollback journal, in '" + files.dir +
                            "', a directory others can write, who could put a journal beside it "
                            "between two writes: move it to a directory only you can write");
    if (can_create)
      KILN_TRY(create_side_files(path_, files, owners));
  }
  const char* vfs = faults_planned() ? fault_vfs()->zName : nullptr;
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
    std::string uri = file_uri(path_) + "?mode=ro" + (immutable_ ? "&immutable=1" : "");
    rc = sqlite3_open_v2(uri.c_str(), &db_,
                         SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, vfs);
  } else {
    rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, vfs);
  }
  if (rc != SQLITE_OK)
    return db_error("cannot open");
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, 30000);
  return Status::ok();
}

Result<bool> Store::refresh() {
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
  dictionaries_.clear();
  newest_dictionary_.clear();
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
  if (!network_fs_kind(path_).empty())
    KILN_TRY(exec("PRAGMA mmap_size=0"));
  KILN_TRY(exec("PRAGMA foreign_keys=ON"));
  if (id != file_id_) {
    if (registered_ && --open_files().count[file_id_] == 0)
      open_files().count.erase(file_id_);
    file_id_ = id;
    ++open_files().count[file_id_];
    registered_ = true;
  }
  return true;
}

void Store::defer_checkpoint() {
  std::lock_guard lock(mu_);
  deferred_ = true;
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
}

void Store::end_deferral() {
  std::lock_guard lock(mu_);
  if (!deferred_)
    return;
  deferred_ = false;
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
}

void Store::finish() {
  if (!db_ || read_only_)
    return;
  bool wrote = migrated_ || sqlite3_total_changes64(db_) > 0;
  if (wrote && !deferred_)
    (void)compact(); // an optimisation: a failure leaves plain blobs, still valid
  if (!wal_)
    return;
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
      std::lock_guard lock(mu_);
      sqlite3_busy_timeout(db_, 0);
      (void)sqlite3_wal_checkpoint_v2(db_, "main", SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    }
  }
  if (!quiet)
    return;
  std::lock_guard lock(mu_);
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

namespace {

// kiln_unhex(text), for migration 8: a key's 32 hex digits (either case) as
// its 16 bytes (key_bytes); NULL for anything else.
void sql_unhex(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const unsigned char* text = sqlite3_value_text(argv[0]);
  int n = sqlite3_value_bytes(argv[0]);
  auto key = text && n == 32 ? parse_hash128(std::string_view(reinterpret_cast<const char*>(text),
                                                              size_t(n)))
                             : Result<Hash128>(make_error(Code::invalid_argument, "not a key"));
  if (!key) {
    sqlite3_result_null(ctx);
    return;
  }
  std::string bytes = key_bytes(*key);
  sqlite3_result_blob(ctx, bytes.data(), 16, SQLITE_TRANSIENT);
}

} // namespace

Status Store::migrate() {
  if (sqlite3_create_function(db_, "kiln_unhex", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                              sql_unhex, nullptr, nullptr) != SQLITE_OK)
    return db_error("cannot prepare the migrations");
  // Foreign keys are off while migrations rebuild tables (schema 5): a
  // dropped table must not cascade to the rows that refer to it. The pragma
  // is a no-op inside a transaction.
  KILN_TRY(exec("PRAGMA foreign_keys=OFF"));
  int from = 0;
  Status s = migrate_steps(&from);
  Status on = exec("PRAGMA foreign_keys=ON");
  KILN_TRY(s);
  KILN_TRY(on);
  migrated_ = true;
  // A new file ran every migration: its schema table, written and rewritten
  // table by table, is packed again (a page of the 32 of an empty cache),
  // which on a file with no rows takes a few milliseconds. Elsewhere the
  // pages the rebuilt tables left free go back to the file system (where
  // the file has auto_vacuum: every file created since schema 5).
  // The packing is only for size: another process already reading the new
  // file (it may, once the migrations commit) must not fail this open.
  if (from == 0) {
    (void)exec("VACUUM");
    return Status::ok();
  }
  return exec("PRAGMA incremental_vacuum");
}

Status Store::migrate_steps(int* from) {
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

Result<bool> Store::has_job(const Hash128& key, const std::vector<std::string>& formats) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT count(*) FROM artifacts WHERE job_key = ?1 AND format = ?2"));
  std::string hex = key.hex();
  for (const std::string &f : formats) {
    Bound b(s);
    b.key(1, key).text(2, f);
    if (b.step() != SQLITE_ROW)
      return db_error("cannot look up job " + hex);
    if (b.col_i64(0) == 0)
      return false;
  }
  if (formats.empty()) {
    KILN_TRY_ASSIGN(auto j, prepare("SELECT 1 FROM jobs WHERE key = ?1"));
    Bound b(j);
    b.key(1, key);
    return b.step() == SQLITE_ROW;
  }
  return true;
}

Result<int64_t> Store::target_id(const JobRecord& job) {
  // A few rows (one per target and CPU): no index needed. Writers are
  // serialised, so two cannot insert the same description.
  KILN_TRY_ASSIGN(auto find, prepare("SELECT id FROM targets WHERE spec = ?1 AND triple = ?2 AND "
                                     "cpu = ?3 AND features = ?4 AND toolchain = ?5 ORDER BY id "
                                     "LIMIT 1"));
  {
    Bound b(find);
    b.text(1, job.target).text(2, job.triple).text(3, job.cpu).text(4, job.features);
    b.text(5, job.toolchain);
    int rc = b.step();
    if (rc == SQLITE_ROW)
      return b.col_i64(0);
    if (rc != SQLITE_DONE)
      return db_error("cannot look up target " + job.target);
  }
  KILN_TRY_ASSIGN(auto ins, prepare("INSERT INTO targets(spec, triple, cpu, features, toolchain) "
                                    "VALUES (?1, ?2, ?3, ?4, ?5)"));
  Bound b(ins);
  b.text(1, job.target).text(2, job.triple).text(3, job.cpu).text(4, job.features);
  b.text(5, job.toolchain);
  if (b.step() != SQLITE_DONE)
    return db_error("cannot record target " + job.target);
  return int64_t(sqlite3_last_insert_rowid(db_));
}

Status Store::insert_job_rows(const JobRecord& job, const std::vector<Artifact>& artifacts,
                              const std::vector<Packed>& packed,
                              const std::vector<JobRef>& refs) {
  const Hash128& key = job.key;
  KILN_TRY_ASSIGN(auto target, target_id(job));
  KILN_TRY_ASSIGN(auto ins,
                  prepare("INSERT OR IGNORE INTO jobs(key, entry, symbol, target_id, options, "
                          "module_hash, compile_ms, created_at) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  {
    Bound b(ins);
    b.key(1, key).text(2, job.entry).text(3, job.symbol).i64(4, target);
    b.text(5, job.options).key(6, job.module_hash);
    b.real(7, job.compile_ms).i64(8, job.created_at ? job.created_at : now_seconds());
    if (b.step() != SQLITE_DONE)
      return db_error("cannot insert the job");
  }
  KILN_TRY_ASSIGN(
      auto art,
      prepare("INSERT OR IGNORE INTO artifacts(job_key, format, raw_size, checksum, data, "
              "dict_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  for (size_t i = 0; i < artifacts.size(); ++i) {
    Bound b(art);
    b.key(1, key).text(2, artifacts[i].format).i64(3, int64_t(artifacts[i].bytes.size()));
    b.i64(4, checksum_of(artifacts[i].bytes)).blob(5, packed[i].data).dict(6, packed[i].dict);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot insert artifact " + artifacts[i].format);
  }
  KILN_TRY_ASSIGN(
      auto ref,
      prepare("INSERT OR IGNORE INTO job_refs(job_key, symbol, entry) VALUES (?1, ?2, ?3)"));
  for (const JobRef &r : refs) {
    Bound b(ref);
    b.key(1, key).text(2, r.symbol).text(3, r.entry);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot insert deferred reference " + r.symbol);
  }
  return Status::ok();
}

Status Store::transaction(const std::function<Status()>& body) {
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

Status Store::put_job(const JobRecord& job, const std::vector<Artifact>& artifacts,
                      const std::vector<JobRef>& refs) {
  for (const Artifact& a : artifacts)
    KILN_TRY(check_storable("the " + a.format + " of job " + job.key.hex() + " (" + job.entry +
                                ", " + job.target + ")",
                            a.bytes.size()));
  std::vector<std::shared_ptr<const Dictionary>> dicts;
  {
    std::lock_guard lock(mu_);
    for (const Artifact& a : artifacts)
      dicts.push_back(writing_dictionary(kind_name(false, a.format)));
  }
  // Compress outside the lock: it is the expensive part.
  std::vector<Packed> packed;
  packed.reserve(artifacts.size());
  for (size_t i = 0; i < artifacts.size(); ++i)
    packed.push_back(pack_with(dicts[i].get(), artifacts[i].bytes));
  std::lock_guard lock(mu_);
  Status s = transaction([&] { return insert_job_rows(job, artifacts, packed, refs); });
  if (!s)
    return s.error().context("storing job " + job.key.hex() + " (" + job.entry + ", " +
                             job.target + ")");
  return s;
}

static JobRecord read_job(const Bound& b) {
  JobRecord j;
  j.key = b.col_key(0);
  j.entry = b.col_text(1);
  j.symbol = b.col_text(2);
  j.target = b.col_text(3);
  j.triple = b.col_text(4);
  j.cpu = b.col_text(5);
  j.features = b.col_text(6);
  j.options = b.col_text(7);
  j.module_hash = b.col_key(8);
  j.toolchain = b.col_text(9);
  j.compile_ms = b.col_real(10);
  j.created_at = b.col_i64(11);
  return j;
}

// A job's columns with its target description; a job whose description is
// missing reads with an empty one (and then fails verify's key check).
#define KILN_JOB_COLUMNS                                                                           \
  "j.key, j.entry, j.symbol, t.spec, t.triple, t.cpu, t.features, j.options, j.module_hash, "      \
  "t.toolchain, j.compile_ms, j.created_at FROM jobs j LEFT JOIN targets t ON t.id = j.target_id"

Result<JobRecord> Store::get_job(const Hash128& key) {
  std::lock_guard lock(mu_);
  return read_job_row(key);
}

Result<JobRecord> Store::read_job_row(const Hash128& key) {
  KILN_TRY_ASSIGN(auto s, prepare("SELECT " KILN_JOB_COLUMNS " WHERE j.key = ?1"));
  Bound b(s);
  b.key(1, key);
  int rc = b.step();
  if (rc == SQLITE_ROW)
    return read_job(b);
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no job " + key.hex() + " in cache '" + path_ + "'");
  return db_error("cannot read job " + key.hex());
}

Result<std::vector<JobRecord>> Store::list_jobs() {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT " KILN_JOB_COLUMNS " ORDER BY t.spec, j.entry, j.key"));
  Bound b(s);
  std::vector<JobRecord> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back(read_job(b));
  if (rc != SQLITE_DONE)
    return db_error("cannot list jobs");
  return out;
}

Result<std::vector<JobRef>> Store::job_refs(const Hash128& key) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT symbol, entry FROM job_refs WHERE job_key = ?1 ORDER BY symbol"));
  Bound b(s);
  b.key(1, key);
  std::vector<JobRef> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_text(0), b.col_text(1)});
  if (rc != SQLITE_DONE)
    return db_error("cannot read the references of job " + key.hex());
  return out;
}

Result<std::vector<ArtifactInfo>> Store::artifact_infos(const Hash128& key) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT format, raw_size, length(data) FROM artifacts WHERE job_key = ?1 "
                          "ORDER BY format"));
  Bound b(s);
  b.key(1, key);
  std::vector<ArtifactInfo> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_text(0), b.col_i64(1), b.col_i64(2)});
  if (rc != SQLITE_DONE)
    return db_error("cannot read the artifacts of job " + key.hex());
  return out;
}

Result<std::string> Store::unpack(const std::string& data, int64_t raw_size, int64_t checksum,
                                  int64_t dict, const std::string& what) {
  if (raw_size < 0)
    return make_error(Code::corrupt, what + " has a negative size");
  Result<std::string> raw = make_error(Code::internal, "unread");
  if (dict == 0) {
    raw = zstd_decompress(data, size_t(raw_size));
  } else {
    auto d = dictionary(dict);
    if (!d)
      return d.error().context(what);
    raw = zstd_decompress_dict((*d)->ddict, data, size_t(raw_size));
  }
  if (!raw)
    return raw.error().context(what);
  if (checksum_of(*raw) != checksum)
    return make_error(Code::corrupt, what + " fails its checksum");
  return raw;
}

// Steps a bound (raw_size, checksum, data, dict_id) query: the checked raw
// bytes, not_found without a row, corrupt if damaged.
Result<std::string> Store::step_blob(Bound& b, const std::string& what) {
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no " + what + " in cache '" + path_ + "'");
  if (rc != SQLITE_ROW)
    return db_error("cannot read " + what);
  return unpack(b.col_blob(2), b.col_i64(0), b.col_i64(1), b.col_dict(3), what);
}

Result<std::shared_ptr<const Dictionary>> Store::dictionary(int64_t id) {
  if (auto it = dictionaries_.find(id); it != dictionaries_.end())
    return it->second;
  std::string what = "dictionary " + std::to_string(id);
  KILN_TRY_ASSIGN(auto s, prepare("SELECT kind, checksum, data FROM dictionaries WHERE id = ?1"));
  Bound b(s);
  b.i64(1, id);
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return make_error(Code::corrupt, what + ", which it needs, is not in cache '" + path_ + "'");
  if (rc != SQLITE_ROW)
    return db_error("cannot read " + what);
  auto d = std::make_shared<Dictionary>();
  d->id = id;
  d->kind = b.col_text(0);
  d->data = b.col_blob(2);
  if (checksum_of(d->data) != b.col_i64(1))
    return make_error(Code::corrupt, what + " (" + d->kind + ") fails its checksum");
  d->ddict = ZSTD_createDDict(d->data.data(), d->data.size());
  if (!d->ddict)
    return make_error(Code::corrupt, what + " (" + d->kind + ") is not a zstd dictionary");
  dictionaries_[id] = d;
  return std::shared_ptr<const Dictionary>(d);
}

Result<std::shared_ptr<const Dictionary>> Store::dictionary_for(const std::string& kind) {
  if (auto it = newest_dictionary_.find(kind); it != newest_dictionary_.end())
    return it->second;
  // Not cached while a kind has none: another process may train one.
  KILN_TRY_ASSIGN(auto s, prepare("SELECT max(id) FROM dictionaries WHERE kind = ?1"));
  int64_t id = 0;
  {
    Bound b(s);
    b.text(1, kind);
    if (b.step() != SQLITE_ROW)
      return db_error("cannot look up the dictionary for " + kind);
    id = b.col_dict(0);
  }
  if (id == 0)
    return std::shared_ptr<const Dictionary>();
  KILN_TRY_ASSIGN(auto d, dictionary(id));
  if (!d->cdict) {
    d->cdict = ZSTD_createCDict(d->data.data(), d->data.size(), kLevel);
    if (!d->cdict)
      return make_error(Code::internal, "cannot prepare dictionary " + std::to_string(id));
  }
  newest_dictionary_[kind] = d;
  return d;
}

std::shared_ptr<const Dictionary> Store::writing_dictionary(const std::string& kind) {
  auto d = dictionary_for(kind);
  return d ? d.take() : nullptr;
}

Packed Store::pack_with(const Dictionary* dict, const std::string& raw) {
  if (dict && dict->cdict) {
    std::string out = compress_with(compress_context().get(), dict->cdict, raw);
    if (!out.empty())
      return {std::move(out), dict->id};
  }
  return {zstd_compress(raw, kLevel), 0};
}

Result<std::string> Store::get_artifact(const Hash128& job, const std::string& format) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT raw_size, checksum, data, dict_id FROM artifacts WHERE "
                          "job_key = ?1 AND format = ?2"));
  Bound b(s);
  b.key(1, job).text(2, format);
  return step_blob(b, "artifact " + format + " of job " + job.hex());
}

Status Store::insert_closure_rows(const ClosureRecord& closure,
                                 const std::vector<NameRecord>& names, int64_t now) {
  // Every path that records a name (precompile, import, a remote fetch)
  // comes here or to point_name: none records one a lookup takes for a key.
  for (const NameRecord& nr : names)
    KILN_TRY(core::check_name(nr.name, "root"));
  // A job a concurrent gc evicted would fail the foreign key with a message
  // naming no job: say which one went.
  KILN_TRY_ASSIGN(auto has, prepare("SELECT symbol FROM jobs WHERE key = ?1"));
  std::string root_symbol;
  auto present = [&](const Hash128& job, const std::string& what) -> Status {
    Bound b(has);
    b.key(1, job);
    int rc = b.step();
    if (rc == SQLITE_ROW) {
      if (job == closure.root_job)
        root_symbol = b.col_text(0);
      return Status::ok();
    }
    if (rc != SQLITE_DONE)
      return db_error("cannot look up job " + job.hex());
    return make_error(Code::not_found, what + " job " + job.hex() +
                                           " is no longer in cache '" + path_ +
                                           "' (evicted by a gc since it was stored or found)");
  };
  KILN_TRY(present(closure.root_job, "root"));
  // A closure whose one member is its root under the job's own symbol (no
  // deferred reference) names no set: closure_members gives that member
  // from the job's row (schema/0008_binary_keys.sql).
  bool lone = closure.members.size() == 1 && closure.members[0].job == closure.root_job &&
              closure.members[0].symbol == root_symbol;
  // Otherwise the members, as a set shared with every closure that has the
  // same ones: a set already stored has its jobs (its rows refer to them),
  // so only a new one is checked and written.
  Hash128 set = core::member_set_key(closure.members);
  KILN_TRY_ASSIGN(auto has_set, prepare("SELECT 1 FROM member_sets WHERE set_key = ?1 LIMIT 1"));
  int found = SQLITE_ROW;
  if (!lone) {
    Bound b(has_set);
    b.key(1, set);
    found = b.step();
  }
  if (found != SQLITE_ROW && found != SQLITE_DONE)
    return db_error("cannot look up the closure's member set");
  if (found == SQLITE_DONE) {
    for (const ClosureMember& mem : closure.members)
      KILN_TRY(present(mem.job, "member '" + mem.symbol + "'"));
    KILN_TRY_ASSIGN(auto m, prepare("INSERT OR IGNORE INTO member_sets(set_key, symbol, "
                                    "job_key) VALUES (?1, ?2, ?3)"));
    for (const ClosureMember& mem : closure.members) {
      Bound b(m);
      b.key(1, set).text(2, mem.symbol).key(3, mem.job);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot insert closure member " + mem.symbol);
    }
  }
  // A closure precompiled again counts as used now, and names its members'
  // set (one made by migration 7 held its own copy; gc removes that).
  // NULL: the lone root.
  KILN_TRY_ASSIGN(auto c, prepare("INSERT INTO closures(key, root_job, target, member_set, "
                                  "created_at, last_used) VALUES (?1, ?2, ?3, ?4, ?5, ?5) "
                                  "ON CONFLICT(key) DO UPDATE SET last_used = "
                                  "max(last_used, excluded.last_used), member_set = "
                                  "excluded.member_set"));
  {
    Bound b(c);
    b.key(1, closure.key).key(2, closure.root_job).text(3, closure.target).i64(5, now);
    if (!lone)
      b.key(4, set);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot insert the closure");
  }
  // A name that keeps its closure keeps its unit; one that moves (an import,
  // a fetch) no longer knows where it came from.
  KILN_TRY_ASSIGN(
      auto n,
      prepare("INSERT INTO names(name, target, closure_key, updated_at) VALUES (?1, ?2, ?3, "
              "?4) ON CONFLICT(name, target) DO UPDATE SET closure_key = excluded.closure_key, "
              "updated_at = excluded.updated_at, unit_id = CASE WHEN closure_key = "
              "excluded.closure_key THEN unit_id END"));
  for (const NameRecord &nr : names) {
    Bound b(n);
    b.text(1, nr.name).text(2, nr.target).key(3, nr.closure).i64(4, now);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot record name " + nr.name);
  }
  return Status::ok();
}

Status Store::put_closure(const ClosureRecord& closure, const std::vector<NameRecord>& names) {
  std::lock_guard lock(mu_);
  Status s = transaction([&] { return insert_closure_rows(closure, names, now_seconds()); });
  if (!s)
    return s.error().context("storing closure " + closure.key.hex());
  return s;
}

Result<std::optional<Store::NameMove>> Store::point_name(const NameRecord& name,
                                                         const std::string& unit) {
  std::lock_guard lock(mu_);
  std::optional<NameMove> moved;
  Status s = transaction([&]() -> Status {
    KILN_TRY(core::check_name(name.name, "root"));
    KILN_TRY_ASSIGN(auto has, prepare("SELECT 1 FROM closures WHERE key = ?1"));
    {
      Bound b(has);
      b.key(1, name.closure);
      int rc = b.step();
      if (rc == SQLITE_DONE)
        return make_error(Code::not_found, "closure " + name.closure.hex() +
                                               " is no longer in cache '" + path_ +
                                               "' (evicted by a gc since it was stored)");
      if (rc != SQLITE_ROW)
        return db_error("cannot look up closure " + name.closure.hex());
    }
    KILN_TRY_ASSIGN(auto old, prepare("SELECT n.closure_key, coalesce(u.path, '') FROM names n "
                                      "LEFT JOIN units u ON u.id = n.unit_id WHERE n.name = ?1 "
                                      "AND n.target = ?2"));
    {
      Bound b(old);
      b.text(1, name.name).text(2, name.target);
      int rc = b.step();
      if (rc == SQLITE_ROW && b.col_key(0) != name.closure)
        moved = NameMove{name.name,   name.target, b.col_key(0), b.col_text(1),
                         name.closure, unit};
      else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_error("cannot resolve name " + name.name);
    }
    KILN_TRY_ASSIGN(
        auto set,
        prepare("INSERT INTO names(name, target, closure_key, updated_at, unit_id) VALUES (?1, "
                "?2, ?3, ?4, ?5) ON CONFLICT(name, target) DO UPDATE SET closure_key = "
                "excluded.closure_key, updated_at = excluded.updated_at, unit_id = "
                "excluded.unit_id"));
    // The unit's row, made for its first name: every name of a unit shares it.
    int64_t unit_id = 0;
    if (!unit.empty()) {
      KILN_TRY_ASSIGN(auto find,
                      prepare("SELECT id FROM units WHERE path = ?1 ORDER BY id LIMIT 1"));
      KILN_TRY_ASSIGN(auto add, prepare("INSERT INTO units(path) VALUES (?1)"));
      Bound f(find);
      f.text(1, unit);
      int rc = f.step();
      if (rc == SQLITE_ROW) {
        unit_id = f.col_i64(0);
      } else if (rc == SQLITE_DONE) {
        Bound a(add);
        a.text(1, unit);
        if (a.step() != SQLITE_DONE)
          return db_error("cannot record unit " + unit);
        unit_id = int64_t(sqlite3_last_insert_rowid(db_));
      } else {
        return db_error("cannot look up unit " + unit);
      }
    }
    Bound b(set);
    b.text(1, name.name).text(2, name.target).key(3, name.closure);
    b.i64(4, now_seconds()).dict(5, unit_id);
    if (b.step() != SQLITE_DONE)
      return db_error("cannot record name " + name.name);
    return Status::ok();
  });
  if (!s)
    return s.error().context("pointing name '" + name.name + "' at closure " +
                             name.closure.hex());
  return moved;
}

Result<std::string> Store::name_unit(const std::string& name, const std::string& target) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("SELECT coalesce(u.path, '') FROM names n LEFT JOIN units u ON "
                                  "u.id = n.unit_id WHERE n.name = ?1 AND n.target = ?2"));
  Bound b(s);
  b.text(1, name).text(2, target);
  int rc = b.step();
  if (rc == SQLITE_ROW)
    return b.col_text(0);
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no root named '" + name + "' for target " + target +
                                           " in cache '" + path_ + "'");
  return db_error("cannot read name " + name);
}

Status Store::read_transaction(const std::function<Status()>& body) {
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

Result<std::optional<Hash128>> Store::read_closure_head(const Hash128& key, ClosureRecord& out) {
  out.key = key;
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT root_job, target, member_set FROM closures WHERE key = ?1"));
  Bound b(s);
  b.key(1, key);
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no closure " + key.hex() + " in cache '" + path_ + "'");
  if (rc != SQLITE_ROW)
    return db_error("cannot read closure " + key.hex());
  auto root = b.col_key_opt(0);
  auto set = b.col_key_opt(2);
  if (!root || (!set && !b.is_null(2)))
    return make_error(Code::corrupt, "closure " + key.hex() + " has a malformed key in its row");
  out.root_job = *root;
  out.target = b.col_text(1);
  return set;
}

Status Store::read_member_rows(const std::optional<Hash128>& set, const ClosureRecord& closure,
                               std::vector<ClosureMember>& out) {
  KILN_TRY_ASSIGN(
      auto s, prepare("SELECT m.symbol, m.job_key, j.entry FROM member_sets m JOIN jobs j ON "
                      "j.key = m.job_key WHERE m.set_key = ?1 ORDER BY m.symbol"));
  KILN_TRY_ASSIGN(auto lone, prepare("SELECT symbol, key, entry FROM jobs WHERE key = ?1"));
  Bound b(set ? s : lone);
  if (set)
    b.key(1, *set);
  else
    b.key(1, closure.root_job);
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_text(0), b.col_key(1), b.col_text(2)});
  if (rc != SQLITE_DONE)
    return db_error("cannot read the members of closure " + closure.key.hex());
  if (out.empty())
    return make_error(Code::corrupt,
                      "closure " + closure.key.hex() + " has no members whose jobs are present");
  return Status::ok();
}

Result<ClosureRecord> Store::read_closure_rows(const Hash128& key) {
  ClosureRecord out;
  KILN_TRY_ASSIGN(auto set, read_closure_head(key, out));
  KILN_TRY(read_member_rows(set, out, out.members));
  return out;
}

Result<Store::ClosureBatch> Store::get_closures(const std::vector<Hash128>& keys) {
  std::lock_guard lock(mu_);
  Result<ClosureBatch> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    ClosureBatch batch;
    batch.closures.resize(keys.size());
    batch.first_of_set.resize(keys.size());
    // Each member set is read once, for the first closure naming it: the
    // roots of a deferred cycle share one set of N rows, not N of them. A
    // lone root (no set) is its own.
    std::map<Hash128, size_t> first;
    for (size_t i = 0; i < keys.size(); ++i) {
      ClosureRecord& c = batch.closures[i];
      auto set = read_closure_head(keys[i], c);
      if (!set) {
        out = set.error();
        return Status::ok();
      }
      std::optional<Hash128> stored = set.take();
      batch.first_of_set[i] = i;
      if (stored) {
        auto [at, fresh] = first.try_emplace(*stored, i);
        batch.first_of_set[i] = at->second;
        if (!fresh)
          continue;
      }
      if (Status read = read_member_rows(stored, c, c.members); !read) {
        out = read.error();
        return Status::ok();
      }
    }
    out = std::move(batch);
    return Status::ok();
  }));
  return out;
}

Result<ClosureRecord> Store::get_closure(const Hash128& key) {
  std::lock_guard lock(mu_);
  Result<ClosureRecord> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    out = read_closure_rows(key);
    return Status::ok();
  }));
  return out;
}

Result<Store::RootRead> Store::read_root(const std::string& name, const std::string& target,
                                         const std::string& arch, bool with_root) {
  std::lock_guard lock(mu_);
  Result<RootRead> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    // A key-form string is a closure key and is never looked up as a name
    // (no name of that form is recorded, and one an older cache holds is
    // not believed); any other string is a name only.
    std::optional<Hash128> key;
    if (is_hash128_hex(name)) {
      key = *parse_hash128(name);
    } else {
      KILN_TRY_ASSIGN(auto by_name,
                      prepare("SELECT closure_key FROM names WHERE name = ?1 AND target = ?2"));
      Bound b(by_name);
      b.text(1, name).text(2, target);
      int rc = b.step();
      if (rc == SQLITE_ROW)
        key = b.col_key(0);
      else if (rc != SQLITE_DONE)
        return db_error("cannot resolve name " + name);
    }
    if (!key) {
      out = make_error(Code::not_found, "no root named '" + name + "' for target " + target +
                                            " in cache '" + path_ + "'");
      return Status::ok();
    }
    auto closure = read_closure_rows(*key);
    if (!closure) {
      out = closure.error();
      return Status::ok();
    }
    RootRead r{closure.take(), std::nullopt, std::nullopt, std::nullopt};
    // The root job too (the host backend checks its CPU features before any
    // image is loaded): in this transaction, not a second one.
    if (with_root)
      if (auto root = read_job_row(r.closure.root_job))
        r.root = root.take();
    if (!arch.empty()) {
      // A damaged image counts as absent here: the caller links anew.
      Hash128 source;
      if (auto bytes = read_best_image(*key, arch, &source)) {
        r.image = bytes.take();
        r.image_of = source;
      }
      else if (bytes.error().code != Code::not_found && bytes.error().code != Code::corrupt)
        return bytes.error();
    }
    out = std::move(r);
    return Status::ok();
  }));
  return out;
}

Result<Hash128> Store::resolve_name(const std::string& name, const std::string& target) {
  // A key-form string names a closure, never a root (core::check_name): a
  // name row of that form in an older cache is not believed.
  if (is_hash128_hex(name))
    return make_error(Code::not_found, "'" + name +
                                           "' has the form of a closure key, which names no "
                                           "root (roots are never named so)");
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("SELECT closure_key FROM names WHERE name = ?1 AND target = ?2"));
  Bound b(s);
  b.text(1, name).text(2, target);
  int rc = b.step();
  if (rc == SQLITE_DONE)
    return make_error(Code::not_found, "no root named '" + name + "' for target " + target +
                                           " in cache '" + path_ + "'");
  if (rc != SQLITE_ROW)
    return db_error("cannot resolve name " + name);
  if (auto key = b.col_key_opt(0))
    return *key;
  return make_error(Code::corrupt, "name '" + name + "' (" + target +
                                       ") names a malformed closure key in cache '" + path_ + "'");
}

Result<std::vector<Hash128>> Store::other_builds(const Hash128& root_job, size_t limit) {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s, prepare("SELECT c.key FROM jobs j JOIN targets tj ON tj.id = "
                                  "j.target_id JOIN jobs o ON o.module_hash = j.module_hash AND "
                                  "o.entry = j.entry AND o.options = j.options AND o.key != j.key "
                                  "JOIN targets t ON t.id = o.target_id AND t.spec = tj.spec "
                                  "JOIN closures c ON c.root_job = o.key WHERE j.key = ?1 "
                                  "ORDER BY c.created_at DESC, c.key LIMIT ?2"));
  Bound b(s);
  b.key(1, root_job).i64(2, int64_t(limit));
  std::vector<Hash128> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back(b.col_key(0));
  if (rc != SQLITE_DONE)
    return db_error("cannot list other builds of job " + root_job.hex());
  return out;
}

Result<std::vector<NameRecord>> Store::names_for(const std::string& name) {
  if (is_hash128_hex(name))
    return std::vector<NameRecord>{}; // a closure key, not a name: as resolve_name
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(
      auto s,
      prepare("SELECT name, target, closure_key FROM names WHERE name = ?1 ORDER BY target"));
  Bound b(s);
  b.text(1, name);
  std::vector<NameRecord> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_text(0), b.col_text(1), b.col_key(2)});
  if (rc != SQLITE_DONE)
    return db_error("cannot read names");
  return out;
}

Result<std::vector<NameRecord>> Store::list_names() {
  std::lock_guard lock(mu_);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT name, target, closure_key FROM names ORDER BY name, target"));
  Bound b(s);
  std::vector<NameRecord> out;
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    out.push_back({b.col_text(0), b.col_text(1), b.col_key(2)});
  if (rc != SQLITE_DONE)
    return db_error("cannot list names");
  return out;
}

// A kernel library is a closure (the union of the roots' closures), so its
// image, gc, usage and verification are a closure's; the row names it, and
// library_roots lists the root names it was made from, in order. gc deletes
// the rows with its closure.
Status Store::put_library(const ClosureRecord& closure, const LibraryRecord& library) {
  KILN_TRY(core::check_name(library.name, "library"));
  std::lock_guard lock(mu_);
  if (read_only_) {
    // As put_closure: succeeds only if it is recorded already.
    auto have = read_library(library.name, library.target);
    if (have && have->closure == closure.key && have->roots == library.roots)
      return Status::ok();
    return read_only_error("recording library '" + library.name + "'");
  }
  Status s = transaction([&]() -> Status {
    int64_t now = now_seconds();
    KILN_TRY(insert_closure_rows(closure, {}, now));
    KILN_TRY_ASSIGN(auto set,
                    prepare("INSERT INTO libraries(name, target, closure_key, updated_at) "
                            "VALUES (?1, ?2, ?3, ?4) ON CONFLICT(name, target) DO UPDATE SET "
                            "closure_key = excluded.closure_key, updated_at = excluded.updated_at"));
    KILN_TRY_ASSIGN(auto clear,
                    prepare("DELETE FROM library_roots WHERE name = ?1 AND target = ?2"));
    KILN_TRY_ASSIGN(auto add, prepare("INSERT INTO library_roots(name, target, position, root) "
                                      "VALUES (?1, ?2, ?3, ?4)"));
    {
      Bound b(set);
      b.text(1, library.name).text(2, library.target).key(3, closure.key).i64(4, now);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot record library " + library.name);
    }
    {
      Bound b(clear);
      b.text(1, library.name).text(2, library.target);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot record library " + library.name);
    }
    for (size_t i = 0; i < library.roots.size(); ++i) {
      Bound b(add);
      b.text(1, library.name).text(2, library.target).i64(3, int64_t(i)).text(4, library.roots[i]);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot record the roots of library " + library.name);
    }
    return Status::ok();
  });
  if (!s)
    return s.error().context("recording library '" + library.name + "' (" + library.target +
                             ")");
  return s;
}

Result<LibraryRecord> Store::read_library(const std::string& name, const std::string& target) {
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT closure_key FROM libraries WHERE name = ?1 AND target = ?2"));
  KILN_TRY_ASSIGN(auto r, prepare("SELECT root FROM library_roots WHERE name = ?1 AND "
                                  "target = ?2 ORDER BY position"));
  LibraryRecord lib{name, target, {}, {}};
  {
    Bound b(s);
    b.text(1, name).text(2, target);
    int rc = b.step();
    if (rc == SQLITE_DONE)
      return make_error(Code::not_found, "no library named '" + name + "' for target " + target +
                                             " in cache '" + path_ + "'");
    if (rc != SQLITE_ROW)
      return db_error("cannot read library " + name);
    auto key = b.col_key_opt(0);
    if (!key)
      return make_error(Code::corrupt, "library '" + name + "' (" + target +
                                           ") names a malformed closure key");
    lib.closure = *key;
  }
  Bound b(r);
  b.text(1, name).text(2, target);
  int rc;
  while ((rc = b.step()) == SQLITE_ROW)
    lib.roots.push_back(b.col_text(0));
  if (rc != SQLITE_DONE)
    return db_error("cannot read the roots of library " + name);
  return lib;
}

Result<LibraryRecord> Store::get_library(const std::string& name, const std::string& target) {
  std::lock_guard lock(mu_);
  // A key-form name is never a library's (put_library refuses one), as for roots.
  if (is_hash128_hex(name))
    return make_error(Code::not_found, "no library named '" + name + "' for target " + target +
                                           " in cache '" + path_ + "'");
  Result<LibraryRecord> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    out = read_library(name, target);
    return Status::ok();
  }));
  return out;
}

Result<std::vector<LibraryRecord>> Store::list_libraries(const std::string& name) {
  std::lock_guard lock(mu_);
  if (is_hash128_hex(name)) // a key-form name is no library's, as in get_library
    return std::vector<LibraryRecord>{};
  Result<std::vector<LibraryRecord>> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    KILN_TRY_ASSIGN(auto s, prepare("SELECT name, target FROM libraries WHERE ?1 = '' OR "
                                    "name = ?1 ORDER BY name, target"));
    std::vector<std::pair<std::string, std::string>> rows;
    {
      Bound b(s);
      b.text(1, name);
      int rc;
      while ((rc = b.step()) == SQLITE_ROW)
        rows.emplace_back(b.col_text(0), b.col_text(1));
      if (rc != SQLITE_DONE)
        return db_error("cannot list libraries");
    }
    std::vector<LibraryRecord> libs;
    for (const auto& [n, t] : rows) {
      auto lib = read_library(n, t);
      if (!lib) {
        out = lib.error();
        return Status::ok();
      }
      libs.push_back(lib.take());
    }
    out = std::move(libs);
    return Status::ok();
  }));
  return out;
}

Status Store::insert_image_row(const ImageRecord& image, const Packed& packed) {
  // Replace, not ignore: a stored image that failed its checks is relinked
  // and must be overwritten (same key, so otherwise the same bytes).
  KILN_TRY_ASSIGN(
      auto s, prepare("INSERT OR REPLACE INTO images(closure_key, arch, linker, format, raw_size, "
                      "checksum, data, created_at, dict_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                      "?8, ?9)"));
  const ImageKey &key = image.key;
  Bound b(s);
  b.key(1, key.closure).text(2, key.arch).text(3, key.linker).text(4, image.format);
  b.i64(5, int64_t(image.bytes.size())).i64(6, checksum_of(image.bytes)).blob(7, packed.data);
  b.i64(8, now_seconds()).dict(9, packed.dict);
  if (b.step() != SQLITE_DONE)
    return db_error("cannot store the image of closure " + key.closure.hex());
  return Status::ok();
}

Status Store::put_image(const ImageKey& key, const std::string& format, const std::string& bytes) {
  if (read_only_) {
    // Kept for this connection's loads: the next process relinks it again.
    std::lock_guard lock(mu_);
    memory_images_[{key.closure, key.arch, key.linker}] = {++memory_seq_, bytes};
    return Status::ok();
  }
  KILN_TRY(check_storable("the image of closure " + key.closure.hex() + " for " + key.arch,
                          bytes.size()));
  ImageRecord image{key, format, bytes};
  std::shared_ptr<const Dictionary> dict;
  {
    std::lock_guard lock(mu_);
    dict = writing_dictionary(kind_name(true, format));
  }
  Packed packed = pack_with(dict.get(), bytes);
  std::lock_guard lock(mu_);
  return insert_image_row(image, packed);
}

Result<std::string> Store::get_image(const ImageKey& key) {
  std::lock_guard lock(mu_);
  if (auto mem = memory_image(key.closure, key.arch, &key.linker))
    return std::move(*mem);
  KILN_TRY_ASSIGN(auto s,
                  prepare("SELECT raw_size, checksum, data, dict_id FROM images WHERE "
                          KILN_IMAGE_SERVES("?1") " AND arch = ?2 AND linker = ?3 ORDER BY "
                          KILN_OWN_IMAGE_FIRST("?1") " LIMIT 1"));
  Bound b(s);
  b.key(1, key.closure).text(2, key.arch).text(3, key.linker);
  return step_blob(b, "image of closure " + key.closure.hex() + " for " + key.arch);
}

Result<std::string> Store::get_image_any_linker(const Hash128& closure, const std::string& arch) {
  std::lock_guard lock(mu_);
  if (auto mem = memory_image(closure, arch, nullptr))
    return std::move(*mem);
  // One read transaction: the row chosen is the row read.
  Result<std::string> out = make_error(Code::internal, "unread");
  KILN_TRY(read_transaction([&]() -> Status {
    out = read_best_image(closure, arch);
    return Status::ok();
  }));
  return out;
}

Result<std::string> Store::read_best_image(const Hash128& closure, const std::string& arch,
                                           Hash128* source) {
  // Candidates first, by index, the choice in code: the one-statement form
  // (an IN list over the member set, ORDER BY ... LIMIT 1) built two
  // temporary b-trees on every load.
  struct Best {
    int64_t rowid = 0, created_at = 0;
    std::string linker;
    Hash128 owner;
    bool found = false;
  } best;
  // Whether a candidate (created, linker) beats the best so far: the
  // newest, then the greatest linker.
  auto better = [&](int64_t created, const std::string& linker) {
    return !best.found || created > best.created_at ||
           (created == best.created_at && linker > best.linker);
  };
  auto scan = [&](Bound& b, const char* what) -> Status {
    for (int rc; (rc = b.step()) != SQLITE_DONE;) {
      if (rc != SQLITE_ROW)
        return db_error(std::string("cannot list ") + what + " of closure " + closure.hex());
      int64_t created = b.col_i64(1);
      std::string linker = b.col_text(2);
      if (better(created, linker))
        best = {b.col_i64(0), created, std::move(linker), b.col_key(3), true};
    }
    return Status::ok();
  };
  {
    KILN_TRY_ASSIGN(auto own, prepare("SELECT rowid, created_at, linker, closure_key FROM images "
                                      "WHERE closure_key = ?1 AND arch = ?2"));
    Bound b(own);
    b.key(1, closure).text(2, arch);
    KILN_TRY(scan(b, "images"));
  }
  if (!best.found) {
    // The image one of its member set's other closures has (a deferred
    // cycle's roots share one). A lone root has no set, and no sibling.
    KILN_TRY_ASSIGN(auto served,
                    prepare("SELECT i.rowid, i.created_at, i.linker, i.closure_key FROM closures c "
                            "JOIN closures s ON s.member_set = c.member_set "
                            "JOIN images i ON i.closure_key = s.key AND i.arch = ?2 "
                            "WHERE c.key = ?1 AND c.member_set IS NOT NULL"));
    Bound b(served);
    b.key(1, closure).text(2, arch);
    KILN_TRY(scan(b, "shared images"));
  }
  if (!best.found)
    KILN_TRY(scan_library_images(closure, arch, [&](int64_t rowid, int64_t created,
                                                    std::string linker, const Hash128& owner) {
      if (better(created, linker))
        best = {rowid, created, std::move(linker), owner, true};
    }));
  std::string what = "image of closure " + closure.hex() + " for " + arch;
  if (!best.found)
    return make_error(Code::not_found, "no " + what + " in cache '" + path_ + "'");
  if (source)
    *source = best.owner;
  KILN_TRY_ASSIGN(auto s, prepare("SELECT raw_size, checksum, data, dict_id FROM images "
                                  "WHERE rowid = ?1"));
  Bound b(s);
  b.i64(1, best.rowid);
  return step_blob(b, what);
}

Status Store::scan_library_images(
    const Hash128& closure, const std::string& arch,
    const std::function<void(int64_t, int64_t, std::string, const Hash128&)>& found) {
  // The image of a kernel library holding every member of the closure (a
  // library precompile links the library's image, not one per root): the
  // libraries whose member set has the closure's root job under the same
  // symbol, kept only if no member of the closure is missing from it.
  KILN_TRY_ASSIGN(auto head, prepare("SELECT c.root_job, c.member_set, coalesce((SELECT m.symbol "
                                     "FROM member_sets m WHERE m.set_key = c.member_set AND "
                                     "m.job_key = c.root_job), j.symbol) FROM closures c JOIN "
                                     "jobs j ON j.key = c.root_job WHERE c.key = ?1"));
  Hash128 root;
  std::optional<Hash128> set;
  std::string symbol;
  {
    Bound b(head);
    b.key(1, closure);
    int rc = b.step();
    if (rc == SQLITE_DONE)
      return Status::ok();
    if (rc != SQLITE_ROW)
      return db_error("cannot read closure " + closure.hex());
    root = b.col_key(0);
    set = b.col_key_opt(1);
    if (!set && !b.is_null(1))
      return Status::ok(); // a damaged row: verify reports it
    symbol = b.col_text(2);
  }
  KILN_TRY_ASSIGN(auto libs,
                  prepare("SELECT i.rowid, i.created_at, i.linker, s.key, s.member_set FROM "
                          "member_sets lm JOIN closures s ON s.member_set = lm.set_key AND "
                          "s.key != ?3 JOIN libraries l ON l.closure_key = s.key JOIN images i ON "
                          "i.closure_key = s.key AND i.arch = ?4 WHERE lm.job_key = ?1 AND "
                          "lm.symbol = ?2"));
  KILN_TRY_ASSIGN(auto missing,
                  prepare("SELECT 1 FROM member_sets a WHERE a.set_key = ?1 AND NOT EXISTS "
                          "(SELECT 1 FROM member_sets b WHERE b.set_key = ?2 AND b.symbol = "
                          "a.symbol AND b.job_key = a.job_key) LIMIT 1"));
  Bound b(libs);
  b.key(1, root).text(2, symbol).key(3, closure).text(4, arch);
  for (int rc; (rc = b.step()) != SQLITE_DONE;) {
    if (rc != SQLITE_ROW)
      return db_error("cannot list the libraries holding closure " + closure.hex());
    if (set) { // a lone root's one member is the one matched
      Bound m(missing);
      m.key(1, *set).key(2, b.col_key(4));
      int mrc = m.step();
      if (mrc == SQLITE_ROW)
        continue; // the library lacks one of the closure's members
      if (mrc != SQLITE_DONE)
        return db_error("cannot compare closure " + closure.hex() + " with a library");
    }
    found(b.col_i64(0), b.col_i64(1), b.col_text(2), b.col_key(3));
  }
  return Status::ok();
}

std::optional<std::string> Store::memory_image(const Hash128& closure, const std::string& arch,
                                               const std::string* linker) {
  const std::pair<uint64_t, std::string>* best = nullptr;
  for (const auto& [k, v] : memory_images_)
    if (std::get<0>(k) == closure && std::get<1>(k) == arch &&
        (!linker || std::get<2>(k) == *linker) && (!best || v.first > best->first))
      best = &v;
  if (!best)
    return std::nullopt;
  return best->second;
}

Status Store::check_closure_recorded(const ClosureRecord& closure,
                                     const std::vector<NameRecord>& names) {
  // A precompile whose every root is already recorded as it would record it
  // succeeds on a read-only cache; anything new is a write it cannot make.
  if (auto have = get_closure(closure.key); !have) {
    if (have.error().code != Code::not_found)
      return have.error();
    return read_only_error("record closure " + closure.key.hex());
  }
  for (const NameRecord& n : names) {
    auto have = resolve_name(n.name, n.target);
    if (!have || *have != n.closure)
      return read_only_error("record name '" + n.name + "' (" + n.target + ") for closure " +
                             n.closure.hex());
  }
  return Status::ok();
}


// --- compaction: dictionaries trained on the cache's own blobs ---------------

Status Store::compact() {
  if (read_only_)
    return Status::ok();
  std::lock_guard lock(mu_);
  // Each kind with plain blobs, in a fixed order so that the same blobs
  // always give the same dictionaries.
  std::vector<std::tuple<bool, std::string, int64_t>> kinds;
  for (bool image : {false, true}) {
    KILN_TRY_ASSIGN(auto s, image ? prepare("SELECT format, count(*) FROM images WHERE dict_id IS "
                                            "NULL GROUP BY format ORDER BY format")
                                  : prepare("SELECT format, count(*) FROM artifacts WHERE dict_id "
                                            "IS NULL GROUP BY format ORDER BY format"));
    Bound b(s);
    int rc;
    while ((rc = b.step()) == SQLITE_ROW)
      kinds.emplace_back(image, b.col_text(0), b.col_i64(1));
    if (rc != SQLITE_DONE)
      return db_error("cannot count plain blobs");
  }
  int64_t budget = kCompactBytes;
  for (const auto& [image, format, plain] : kinds)
    KILN_TRY(compact_kind(image, format, plain, budget));
  // Free pages go back to the file system when the smaller blobs freed
  // some, or when they are a thirty-second of the file (index pages that
  // updates split, memos recorded again): moving a few dozen pages costs a
  // closing writer little. Fewer stay for the next writer to reuse.
  KILN_TRY_ASSIGN(auto free_pages, count("PRAGMA freelist_count"));
  KILN_TRY_ASSIGN(auto pages, count("PRAGMA page_count"));
  if (free_pages > 0 && (budget < kCompactBytes || free_pages * 32 > pages))
    KILN_TRY(exec("PRAGMA incremental_vacuum"));
  return Status::ok();
}

Status Store::compact_kind(bool image, const std::string& format, int64_t plain,
                           int64_t& budget) {
  std::string kind = kind_name(image, format);
  auto newest = dictionary_for(kind);
  if (!newest)
    return Status::ok(); // a damaged dictionary: verify reports it; nothing to do here
  std::shared_ptr<const Dictionary> dict = newest.take();
  if (!dict) {
    if (plain < kMinDictionarySamples)
      return Status::ok();
    // A dictionary that did not pay for itself is tried again only when the
    // kind's plain blobs have grown fourfold.
    KILN_TRY_ASSIGN(auto attempt, prepare("SELECT value FROM meta WHERE key = ?1"));
    {
      Bound b(attempt);
      b.text(1, "dictionary attempt: " + kind);
      if (b.step() == SQLITE_ROW && plain < 4 * std::atoll(b.col_text(0).c_str()))
        return Status::ok();
    }
    KILN_TRY_ASSIGN(dict, train_dictionary(image, format, plain));
    if (!dict)
      return Status::ok();
  }
  if (budget <= 0)
    return Status::ok();
  // Recompress plain blobs with the dictionary: the raw bytes, checksum and
  // rowid stay; a damaged blob is left as it is, for verify to report. The
  // rows are deleted and inserted again rather than updated in place: a row
  // that shrinks keeps its page, and these shrink to a fraction.
  return transaction([&]() -> Status {
    KILN_TRY_ASSIGN(auto sel,
                    image ? prepare("SELECT rowid, raw_size, checksum, data, closure_key, arch, "
                                    "linker, created_at FROM images WHERE format = ?1 AND "
                                    "dict_id IS NULL ORDER BY rowid LIMIT ?2")
                          : prepare("SELECT rowid, raw_size, checksum, data, job_key FROM "
                                    "artifacts WHERE format = ?1 AND dict_id IS NULL ORDER BY "
                                    "rowid LIMIT ?2"));
    struct Row {
      int64_t rowid, raw_size, checksum;
      std::string data, key, arch, linker;
      int64_t created_at = 0;
    };
    std::vector<Row> rows;
    CompressContext cctx = compress_context();
    {
      Bound b(sel);
      b.text(1, format).i64(2, kCompactBlobs);
      while (budget > 0 && b.step() == SQLITE_ROW) {
        Row r{b.col_i64(0), b.col_i64(1), b.col_i64(2), b.col_blob(3), b.col_blob(4), {}, {}};
        if (image) {
          r.arch = b.col_text(5);
          r.linker = b.col_text(6);
          r.created_at = b.col_i64(7);
        }
        budget -= std::max<int64_t>(r.raw_size, 1);
        if (r.raw_size < 0)
          continue;
        auto raw = zstd_decompress(r.data, size_t(r.raw_size));
        if (!raw || checksum_of(*raw) != r.checksum)
          continue;
        std::string packed = compress_with(cctx.get(), dict->cdict, *raw);
        if (packed.empty())
          continue;
        r.data = std::move(packed);
        rows.push_back(std::move(r));
      }
    }
    KILN_TRY_ASSIGN(auto del, image ? prepare("DELETE FROM images WHERE rowid = ?1")
                                    : prepare("DELETE FROM artifacts WHERE rowid = ?1"));
    for (const Row& r : rows) {
      Bound b(del);
      b.i64(1, r.rowid);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot recompress a blob of " + kind);
    }
    KILN_TRY_ASSIGN(auto ins,
                    image ? prepare("INSERT INTO images(rowid, closure_key, arch, linker, format, "
                                    "raw_size, checksum, data, created_at, dict_id) VALUES (?1, "
                                    "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")
                          : prepare("INSERT INTO artifacts(rowid, job_key, format, raw_size, "
                                    "checksum, data, dict_id) VALUES (?1, ?2, ?5, ?6, ?7, ?8, "
                                    "?10)"));
    for (const Row& r : rows) {
      Bound b(ins);
      b.i64(1, r.rowid).blob(2, r.key).text(5, format).i64(6, r.raw_size).i64(7, r.checksum);
      b.blob(8, r.data).i64(10, dict->id);
      if (image)
        b.text(3, r.arch).text(4, r.linker).i64(9, r.created_at);
      if (b.step() != SQLITE_DONE)
        return db_error("cannot recompress a blob of " + kind);
    }
    return Status::ok();
  });
}

Result<std::shared_ptr<const Dictionary>> Store::train_dictionary(bool image,
                                                                  const std::string& format,
                                                                  int64_t plain) {
  std::string kind = kind_name(image, format);
  // Samples in key order, so that every cache holding the same blobs trains
  // the same dictionary.
  Samples samples;
  KILN_TRY(read_transaction([&]() -> Status {
    KILN_TRY_ASSIGN(auto s, image ? prepare("SELECT raw_size, checksum, data FROM images WHERE "
                                            "format = ?1 AND dict_id IS NULL AND raw_size <= ?2 "
                                            "ORDER BY closure_key, arch, linker LIMIT ?3")
                                  : prepare("SELECT raw_size, checksum, data FROM artifacts WHERE "
                                            "format = ?1 AND dict_id IS NULL AND raw_size <= ?2 "
                                            "ORDER BY job_key LIMIT ?3"));
    Bound b(s);
    b.text(1, format).i64(2, kMaxSampleSize).i64(3, kMaxSamples);
    while (samples.bytes.size() < kMaxSampleBytes && b.step() == SQLITE_ROW) {
      std::string data = b.col_blob(2);
      auto raw = unpack(data, b.col_i64(0), b.col_i64(1), 0, kind);
      if (!raw)
        continue; // damaged: not a sample
      samples.bytes += *raw;
      samples.sizes.push_back(raw->size());
      samples.stored += int64_t(data.size());
    }
    return Status::ok();
  }));
  // The candidates: about an eighth of the samples (zstd's advice is a
  // hundredth; small caches do better with more), and smaller ones, which
  // win when the blobs are few. The one that stores the samples in the
  // fewest bytes, itself included, is kept if it saves a tenth.
  std::string best;
  int64_t best_cost = INT64_MAX;
  if (samples.sizes.size() >= size_t(kMinDictionarySamples)) {
    size_t cap = kMaxDictionarySize;
    while (cap > kMinDictionarySize && cap > samples.bytes.size() / 8)
      cap /= 2;
    for (size_t c : {cap, cap / 2, cap / 4}) {
      if (c < kMinDictionarySize)
        break;
      std::string dict = train(samples, c);
      if (dict.empty())
        continue;
      int64_t cost = cost_with(dict, samples);
      if (cost < best_cost) {
        best = std::move(dict);
        best_cost = cost;
      }
    }
  }
  bool worth = !best.empty() && best_cost <= samples.stored - samples.stored / 10;
  KILN_TRY(transaction([&]() -> Status {
    if (!worth) {
      KILN_TRY_ASSIGN(auto s, prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)"));
      Bound b(s);
      b.text(1, "dictionary attempt: " + kind).text(2, std::to_string(plain));
      if (b.step() != SQLITE_DONE)
        return db_error("cannot record a dictionary attempt");
      return Status::ok();
    }
    // Another process may have trained one meanwhile: the first one stays.
    KILN_TRY_ASSIGN(auto have, prepare("SELECT max(id) FROM dictionaries WHERE kind = ?1"));
    {
      Bound b(have);
      b.text(1, kind);
      if (b.step() == SQLITE_ROW && b.col_dict(0) != 0)
        return Status::ok();
    }
    KILN_TRY_ASSIGN(auto ins, prepare("INSERT INTO dictionaries(kind, samples, checksum, data, "
                                      "created_at) VALUES (?1, ?2, ?3, ?4, ?5)"));
    Bound b(ins);
    b.text(1, kind).i64(2, int64_t(samples.sizes.size())).i64(3, checksum_of(best));
    b.blob(4, best).i64(5, now_seconds());
    if (b.step() != SQLITE_DONE)
      return db_error("cannot store a dictionary for " + kind);
    return Status::ok();
  }));
  if (!worth)
    return std::shared_ptr<const Dictionary>();
  return dictionary_for(kind);
}

} // namespace kiln::storage
