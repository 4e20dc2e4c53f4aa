#include "support/files.h"

#include "support/fault.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace kiln {

static Error errno_error(const std::string& what) {
  return make_error(errno == ENOENT ? Code::not_found : Code::internal,
                    what + ": " + std::strerror(errno));
}

Result<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno_error("cannot open '" + path + "'");
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
    const char* name;
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

Result<TempDir> TempDir::create(const char* prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + ".XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    return errno_error("cannot create a temporary directory");
  return TempDir(tmpl);
}

TempDir::~TempDir() {
  if (!path_.empty())
    remove_tree(path_);
}

} // namespace kiln
