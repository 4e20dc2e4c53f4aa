// Fuzz target: opening a cache file made of arbitrary bytes, then reading
// everything a user's commands read (ls, show, verify, stats, a load's
// name and image lookups, a gc dry run). Every path must end in a clear
// error or a result, never a crash; the file is never modified unless it
// opened as a Kiln cache.
#include "storage/local/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

std::string dir() {
  static std::string d = [] {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/kiln-fuzz-cache-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      std::abort();
    return tmpl;
  }();
  return d;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = dir() + "/kiln.db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    ::unlink((path + suffix).c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, data, size) != ssize_t(size))
    std::abort();
  ::close(fd);
  {
    auto store = kiln::storage::Store::open(path);
    if (!store)
      return 0;
    kiln::storage::Store& s = **store;
    (void)s.verify();
    (void)s.upkeep().stats();
    if (auto jobs = s.jobs().list_jobs())
      for (const auto& j : *jobs) {
        (void)s.jobs().job_refs(j.key);
        if (auto infos = s.jobs().artifact_infos(j.key))
          for (const auto& i : *infos)
            (void)s.jobs().get_artifact(j.key, i.format);
      }
    if (auto closures = s.closures().list_closures())
      for (const auto& c : *closures) {
        (void)s.images().images_of(c.key);
        (void)s.images().get_image_any_linker(c.key, "x86_64-linux");
      }
    if (auto names = s.names().list_names())
      for (const auto& n : *names)
        (void)s.names().resolve_name(n.name, n.target);
    kiln::storage::GcOptions o;
    o.max_size = 0;
    o.dry_run = true;
    (void)s.upkeep().gc(o);
  }
  return 0;
}
