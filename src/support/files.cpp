#include "support/files.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
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

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmpXXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return errno_error("cannot create a temp file beside '" + path + "'");
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
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
