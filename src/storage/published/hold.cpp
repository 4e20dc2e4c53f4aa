// Whether the published host images are current, and the hold that stamps
// them anew when Kiln's own changes leave what they hold true (published.h).
#include "storage/published/format.h"

#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::storage {

using namespace published_format;

namespace {

/// Opens `<cache>-images` for writing if it is this user's regular file
/// with a sound header stamped with the files' state now; its header then
/// in `h`, its stat in `st`.
int open_current(const std::string& cache_path, char* h, struct stat& st) {
  std::string path = published_path(cache_path);
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
      st.st_uid == ::geteuid() &&
      pread_all(fd, h, kHeaderBytes, 0) && sound_header(h) &&
      CacheState::in(h) == CacheState::at(cache_path, cache_path + "-wal"))
    return fd;
  ::close(fd);
  return -1;
}

} // namespace

bool published_current(const std::string& cache_path) {
  // Opened as a load would: a damaged one is not current either.
  return bool(PublishedImages::open(cache_path));
}

std::unique_ptr<PublishedHold> PublishedHold::take(const std::string& cache_path) {
  char h[kHeaderBytes];
  struct stat st;
  int fd = open_current(cache_path, h, st);
  if (fd < 0)
    return nullptr;
  std::unique_ptr<PublishedHold> hold(new PublishedHold());
  hold->cache_path_ = cache_path;
  hold->fd_ = fd;
  hold->dev_ = uint64_t(st.st_dev);
  hold->ino_ = uint64_t(st.st_ino);
  hold->header_.assign(h, kHeaderBytes);
  return hold;
}

PublishedHold::~PublishedHold() {
  if (fd_ >= 0)
    ::close(fd_);
}

void PublishedHold::renew() {
  if (fd_ < 0)
    return;
  CacheState now = CacheState::at(cache_path_, cache_path_ + "-wal");
  // Still the file in place (a publication since renamed another there),
  // and stamped as when taken (another process's renewal is as new).
  struct stat st;
  char h[kHeaderBytes];
  std::string path = published_path(cache_path_);
  if (::lstat(path.c_str(), &st) != 0 || uint64_t(st.st_dev) != dev_ ||
      uint64_t(st.st_ino) != ino_ || !pread_all(fd_, h, kHeaderBytes, 0) ||
      std::memcmp(h, header_.data(), kHeaderBytes) != 0)
    return;
  CacheState was = CacheState::in(h);
  if (now == was || now.dev != was.dev || now.ino != was.ino)
    return;
  stamp_header(h, fresh_state(cache_path_, cache_path_ + "-wal"));
  // One write of the header: a load that reads it half written finds its
  // checksum wrong, and reads the cache file that once.
  (void)::pwrite(fd_, h, kHeaderBytes, 0);
}

} // namespace kiln::storage
