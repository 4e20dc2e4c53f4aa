#include "support/files.h"

#include "support/fault.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <utility>
#include <vector>

namespace kiln {

static Error errno_error(const std::string& what) {
  return make_error(errno == ENOENT ? Code::not_found : Code::internal,
                    what + ": " + std::strerror(errno));
}

Result<std::string> read_file(const std::string& path, size_t max_size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno_error("cannot open '" + path + "'");
  auto too_large = [&](uint64_t size) {
    ::close(fd);
    return make_error(Code::corrupt, "'" + path + "' is " +
                                         (size > max_size ? std::to_string(size) + " bytes"
                                                          : "larger than that") +
                                         ", over the " + std::to_string(max_size) +
                                         "-byte maximum");
  };
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_size)
    return too_large(uint64_t(st.st_size));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      Error e = errno_error("cannot read '" + path + "'");
      ::close(fd);
      return e;
    }
    if (n == 0)
      break;
    if (size_t(n) > max_size - out.size())
      return too_large(uint64_t(out.size()) + uint64_t(n));
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

Status write_scratch_file(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return errno_error("cannot create '" + path + "'");
  for (size_t off = 0; off < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      Error e = errno_error("cannot write '" + path + "'");
      ::close(fd);
      return e;
    }
    off += size_t(n);
  }
  if (::close(fd) != 0)
    return errno_error("cannot write '" + path + "'");
  return Status::ok();
}

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmpXXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return errno_error("cannot create a temp file beside '" + path + "'");
  // An injected failure strikes after half the bytes are out, as a full
  // disk would: the temp file must still vanish and `path` stay as it was.
  bool fail = fault::hit("file-write");
  size_t end = fail ? bytes.size() / 2 : bytes.size();
  size_t off = 0;
  while (off < end || fail) {
    if (off >= end) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error(Code::internal, "cannot write '" + tmp + "': " + fault::message("file-write"));
    }
    ssize_t n = ::write(fd, bytes.data() + off, end - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      Error e = errno_error("cannot write '" + tmp + "'");
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    off += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Error e = errno_error("cannot flush '" + tmp + "'");
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = errno_error("cannot rename '" + tmp + "' to '" + path + "'");
    ::unlink(tmp.c_str());
    return e;
  }
  return Status::ok();
}

namespace {

// The directory part of `path` ("." for a bare name) and its last component.
std::pair<std::string, std::string> split_path(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

} // namespace

Status refuse_database_file(const std::string& path, const std::string& database,
                            const std::string& role) {
  auto refuse = [&](const std::string& which) {
    return make_error(Code::invalid_argument,
                      role + " '" + path + "' is " + which + "; use another path");
  };
  // The database as named and, where it is a symbolic link, as resolved:
  // SQLite names its side files after the resolved path.
  std::vector<std::string> names{database};
  if (char* real = ::realpath(database.c_str(), nullptr)) {
    if (database != real)
      names.emplace_back(real);
    std::free(real);
  }
  struct stat target;
  bool exists = ::stat(path.c_str(), &target) == 0;
  // For a name that does not exist yet: its directory, and the name itself
  // (a dangling symbolic link is replaced, not followed, by a write).
  auto [dir, base] = split_path(path);
  struct stat target_dir;
  bool have_dir = ::stat(dir.c_str(), &target_dir) == 0;
  for (const std::string& db : names) {
    auto [db_dir, db_base] = split_path(db);
    struct stat dd;
    bool same_dir = have_dir && ::stat(db_dir.c_str(), &dd) == 0 && same_file(dd, target_dir);
    // SQLite's side files, and Kiln's own: published images, the load log
    // and the space gc keeps for a full disk.
    for (const char* suffix : {"", "-wal", "-shm", "-journal", "-images", "-loads", "-reserve"}) {
      std::string side = db + suffix;
      std::string which = *suffix ? "the " + std::string(suffix + 1) + " file of the cache '" +
                                        database + "'"
                                  : "the cache '" + database + "' itself";
      struct stat s;
      if (exists && ::stat(side.c_str(), &s) == 0 && same_file(s, target))
        return refuse(which);
      if (same_dir && base == db_base + suffix)
        return refuse(which);
    }
  }
  return Status::ok();
}

Status make_dirs(const std::string& dir) {
  if (dir.empty())
    return Status::ok();
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty())
      continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return errno_error("cannot create directory '" + partial + "'");
  }
  return Status::ok();
}

Result<std::string> default_cache_path() {
  if (const char* p = std::getenv("KILN_CACHE"); p && *p)
    return std::string(p);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/kiln/kiln.db";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/kiln/kiln.db";
  return make_error(Code::invalid_argument,
                    "no cache path: set KILN_CACHE, XDG_CACHE_HOME or HOME, or pass a path");
}

std::string network_fs_kind(const std::string& path) {
  if (const char* env = std::getenv("KILN_NETWORK_FS"); env && *env)
    return std::string(env) == "0" ? std::string() : std::string(env);
  struct statfs sf;
  if (::statfs(path.c_str(), &sf) != 0) {
    auto slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    if (::statfs(dir.c_str(), &sf) != 0)
      return {};
  }
  // f_type magic numbers from linux/magic.h and the file systems' sources;
  // listed here because not every one is in the installed headers.
  static constexpr struct {
    unsigned long magic;
    char name[12]; // held, not pointed to: no relocation at load
  } kNetwork[] = {
      {0x6969, "nfs"},           {0x517B, "smb"},       {0xFF534D42, "cifs"},
      {0xFE534D42, "smb2"},      {0x65735546, "fuse"},  {0x01021997, "9p"},
      {0x5346414F, "afs"},       {0x6B414653, "afs"},   {0x00C36400, "ceph"},
      {0x0BD00BD0, "lustre"},    {0x47504653, "gpfs"},  {0x73757245, "coda"},
      {0x564C, "ncp"},           {0x7461636F, "ocfs2"}, {0x01161970, "gfs2"},
      {0xAAD7AAEA, "panfs"},     {0x19830326, "beegfs"}, {0x20030528, "orangefs"},
      {0x013111A8, "ibrix"},     {0x61636673, "acfs"},  {0x2BAD1DEA, "wekafs"},
  };
  for (const auto& fs : kNetwork)
    if ((static_cast<unsigned long>(sf.f_type) & 0xFFFFFFFFul) == fs.magic)
      return fs.name;
  return {};
}

static void remove_tree(const std::string& path) {
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..")
        continue;
      std::string child = path + "/" + name;
      struct stat st;
      if (::lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        remove_tree(child);
      else
        ::unlink(child.c_str());
    }
    ::closedir(d);
  }
  ::rmdir(path.c_str());
}

// --- temporary directories removed by a signal that ends the process ------
// A fixed table of the live directories' paths, each slot claimed and freed
// with atomics, so that a handler running on any thread, at any moment, sees
// whole paths. The handler uses async-signal-safe calls only: open, the
// getdents64 system call, unlinkat, rmdir, sigaction, raise. (errno is not
// restored: the process ends.)
namespace {

constexpr int kSignalSlots = 64;
constexpr size_t kSlotPath = 512;
struct SignalSlot {
  std::atomic<int> state{0}; // 0 free, 1 being written, 2 live
  char path[kSlotPath];
};
SignalSlot g_slots[kSignalSlots];
constexpr int kCleanedSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Removes the files of `dir` (a temporary directory holds files only) and
// the directory.
void remove_flat_dir_signal_safe(const char* dir) {
  int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (;;) {
      long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0)
        break;
      for (long at = 0; at < n;) {
        struct Entry {
          uint64_t ino;
          int64_t off;
          unsigned short reclen;
          unsigned char type;
          char name[1];
        };
        auto* e = reinterpret_cast<Entry*>(buf + at);
        at += e->reclen;
        if (e->name[0] == '.' && (e->name[1] == 0 || (e->name[1] == '.' && e->name[2] == 0)))
          continue;
        ::unlinkat(fd, e->name, 0);
      }
    }
    ::close(fd);
  }
  ::rmdir(dir);
}

void on_ending_signal(int sig) {
  for (SignalSlot& slot : g_slots) {
    int live = 2;
    // Taken, so that the owner's destructor does not free it meanwhile.
    if (slot.state.compare_exchange_strong(live, 1))
      remove_flat_dir_signal_safe(slot.path);
  }
  // The default: the process ends by this signal, as it would have.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

// Where a signal's disposition is the default (it ends the process), the
// handler above takes its place. A handler someone else set is left as it
// is: that process handles the signal, and its directories go with their
// TempDir. Looked at again at each creation, since a program may set its
// handlers back to the default at any time.
void install_signal_cleanup() {
  static std::mutex mu;
  std::lock_guard lock(mu);
  for (int sig : kCleanedSignals) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) != 0 || (now.sa_flags & SA_SIGINFO) ||
        now.sa_handler != SIG_DFL)
      continue;
    struct sigaction mine {};
    mine.sa_handler = on_ending_signal;
    mine.sa_flags = SA_RESTART;
    sigfillset(&mine.sa_mask);
    ::sigaction(sig, &mine, nullptr);
  }
}

int claim_signal_slot(const std::string& path) {
  if (path.size() >= kSlotPath)
    return -1;
  install_signal_cleanup();
  for (int i = 0; i < kSignalSlots; ++i) {
    int free_slot = 0;
    if (!g_slots[i].state.compare_exchange_strong(free_slot, 1))
      continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2);
    return i;
  }
  return -1; // more than kSignalSlots at once: removed at destruction only
}

} // namespace

Result<TempDir> TempDir::create(const char* prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + ".XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    return errno_error("cannot create a temporary directory");
  int slot = claim_signal_slot(tmpl);
  return TempDir(tmpl, slot);
}

TempDir::~TempDir() {
  if (slot_ >= 0) {
    int live = 2;
    // A signal handler that took it is removing it, and the process ends.
    if (!g_slots[slot_].state.compare_exchange_strong(live, 1))
      return;
  }
  if (!path_.empty())
    remove_tree(path_);
  if (slot_ >= 0)
    g_slots[slot_].state.store(0);
}

} // namespace kiln
