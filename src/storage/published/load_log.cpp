// The load log (published.h): loads served by the published host images,
// appended by a loading process, taken in by the cache file.
//
// `<cache>-loads`: 48-byte records: "KLOD", the low 32 bits of the XXH3-64
//   of the rest, the closure key, i64 time, i64 loads, i64 image hits.
#include "storage/published/format.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::storage {

using namespace published_format;

namespace {

constexpr char kNoteMagic[4] = {'K', 'L', 'O', 'D'};
constexpr size_t kNoteBytes = 4 + 4 + 16 + 8 + 8 + 8; // magic, checksum, key, when, loads, hits
/// A load log larger than this is dropped unread: usage is advisory.
constexpr uint64_t kMaxLogBytes = uint64_t(64) << 20;

} // namespace

std::string load_log_path(const std::string& cache_path) { return cache_path + "-loads"; }

bool append_load_log(const std::string& cache_path, mode_t mode,
                     const std::vector<LoadNote>& notes, uint64_t* size) {
  if (notes.empty())
    return true;
  std::string out;
  for (const LoadNote& n : notes) {
    std::string rec;
    put_key(rec, n.closure);
    put_u64(rec, uint64_t(n.when));
    put_u64(rec, uint64_t(n.loads));
    put_u64(rec, uint64_t(n.image_hits));
    out.append(kNoteMagic, sizeof kNoteMagic);
    put_u32(out, uint32_t(hash64(rec)));
    out += rec;
  }
  std::string path = load_log_path(cache_path);
  // Not blocking: a FIFO put in its place must not hold the process.
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                  mode);
  if (fd < 0)
    return false;
  struct stat st;
  // Only a regular file of this user's that no one else can write, under
  // this one name (not a hard link to another file), is added to; a new
  // one gets the cache file's mode whatever the umask.
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
            st.st_uid == ::geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
  if (ok && st.st_size == 0)
    (void)::fchmod(fd, mode & 0644);
  ok = ok && ::write(fd, out.data(), out.size()) == ssize_t(out.size());
  if (ok && size)
    *size = uint64_t(st.st_size) + out.size();
  ::close(fd);
  return ok;
}

std::vector<LoadNote> take_load_log(const std::string& cache_path) {
  std::vector<LoadNote> out;
  std::string path = load_log_path(cache_path);
  // Renamed first: a loader appending meanwhile appends to the renamed file
  // (lost once read: usage is advisory) or starts a new one.
  // A name of this thread's own: two threads taking at once each take
  // what they renamed.
  static std::atomic<unsigned> takes{0};
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".taken%ld.%u", long(::getpid()),
                takes.fetch_add(1, std::memory_order_relaxed));
  std::string taken = path + suffix;
  if (::rename(path.c_str(), taken.c_str()) != 0)
    return out;
  int fd = ::open(taken.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat st;
  // Only this user's regular file that no one else could write, under this
  // one name, is believed (usage decides what gc keeps); whatever it was,
  // the name is removed.
  bool trusted = fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                 st.st_uid == ::geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
  ::unlink(taken.c_str());
  if (fd < 0)
    return out;
  // No use recorded later than a day from now is believed: it would keep
  // its closure from gc for good.
  const int64_t latest = int64_t(std::time(nullptr)) + 86400;
  if (trusted && uint64_t(st.st_size) <= kMaxLogBytes) {
    std::string bytes(size_t(st.st_size), '\0');
    if (pread_all(fd, bytes.data(), bytes.size(), 0))
      // A record that is not sound (a write torn by a crash or a full
      // disk) is passed over to the next magic, where the records after it
      // start again.
      for (size_t at = 0; at + kNoteBytes <= bytes.size();) {
        const char* p = bytes.data() + at;
        std::string_view rec(p + 8, kNoteBytes - 8);
        if (std::memcmp(p, kNoteMagic, 4) != 0 || get_u32(p + 4) != uint32_t(hash64(rec))) {
          const void* next = ::memmem(p + 1, bytes.size() - at - 1, kNoteMagic, 4);
          if (!next)
            break;
          at = size_t(static_cast<const char*>(next) - bytes.data());
          continue;
        }
        at += kNoteBytes;
        LoadNote n;
        n.closure.lo = get_u64(p + 8);
        n.closure.hi = get_u64(p + 16);
        n.when = int64_t(get_u64(p + 24));
        n.loads = int64_t(get_u64(p + 32));
        n.image_hits = int64_t(get_u64(p + 40));
        // Counts one process could not have made are dropped, not summed.
        if (n.loads < 0 || n.image_hits < 0 || n.loads > (int64_t(1) << 40) ||
            n.image_hits > (int64_t(1) << 40) || n.when < 0 || n.when > latest)
          continue;
        out.push_back(n);
      }
  }
  ::close(fd);
  return out;
}

} // namespace kiln::storage
