// The on-disk format of the published host images file (published.h),
// shared by its writer (write.cpp), its reader (read.cpp) and the hold that
// stamps it anew (hold.cpp). Inline: a warm load reads through these.
//
// `<cache>-images`, little-endian:
//   header (128 bytes): "KILNPUB1", u32 version, u32 roots, u64 device and
//     u64 inode of the cache file, u64 table bytes as stored (packed,
//     support/lz.h; the table ends the file), u64 file bytes, u64 offset,
//     u64 size as stored (packed) and u64 size unpacked of the dictionary,
//     u64 table bytes unpacked; the stamp: i64 size and i64 modification
//     time (ns) of the cache file, i64 size and i64 modification time of its
//     WAL (both 0: none, or empty); u64 XXH3-64 of the table as stored, u64
//     XXH3-64 of the 120 bytes before it;
//   the dictionary (whole images at a stride through them, at most 32 KiB,
//     itself packed), then the images, each once, packed with it
//     (support/lz.h): host images of one cache share their ELF headers,
//     dynamic sections and symbol tables;
//   table (counts and lengths LEB128, strings a length and the bytes):
//     the CPUs (count; root job target, cpu and features each: the
//     kilobyte of features is shared by the roots built for one CPU); the
//     member sets (count; each a count of (symbol, entry), a deferred
//     symbol as 0 and its digits' 16 bytes, any other as 1 and the text:
//     the roots of one deferred cycle share one, as in the cache file; a
//     load reads no job key, so none is stored); the images (count; each
//     its size packed and loaded and its XXH3-64 as loaded, lying one after
//     another from the dictionary's end to the table); then one record per
//     root, sorted by (name, target), then one per kernel library, so
//     sorted too (kLibrary set): name, target, closure key, flags
//     (kSameTarget, kOwnImage, kLibrary, kAllTargets), the closure's target
//     unless the name's, its member set, its root job's CPU, its image, and
//     the key of the closure whose image that is unless its own. The table
//     of every benchmark workload in one cache (1,017 roots) is 71 KB so;
//     91 KB with each member's job key and each root's job (format 7), 206
//     KB with fixed-size fields, keys for every reference and each image's
//     place.
#pragma once

#include "storage/published/published.h"

#include "core/keys.h"

#include "storage/file_trust.h"
#include "support/hash.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

/// Internal to the published images layer (storage/published/): not for
/// other layers.
namespace kiln::storage::published_format {

inline constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'P', 'U', 'B', '1'};
inline constexpr uint32_t kVersion = 8;
inline constexpr size_t kHeaderBytes = 128;
inline constexpr size_t kStampAt = 80, kTableSumAt = 112, kHeaderSumAt = 120;
/// A root's flags: its closure is for its name's target; its image is its
/// closure's own (not a sibling's or a library's). (4 named the root job's
/// member in format 7.)
inline constexpr uint8_t kSameTarget = 1, kOwnImage = 2;
/// A kernel library's record, not a root's (they follow the roots).
inline constexpr uint8_t kLibrary = 8;
/// The file holds every target the record's name has.
inline constexpr uint8_t kAllTargets = 16;
/// The images' dictionary: 32 KiB packed 200 one-kernel images into the
/// fewest bytes with it, stored unpacked (84 KB; 16 KiB: 100 KB, 64 KiB:
/// 111 KB); stored packed, 64 KiB saves 3% more on every benchmark workload
/// in one cache, and costs each load twice the unpacking and copying.
inline constexpr size_t kDictionaryBytes = 32 << 10;

inline void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}
inline void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}
inline void put_key(std::string& out, const Hash128& k) {
  put_u64(out, k.lo);
  put_u64(out, k.hi);
}
/// LEB128: seven bits a byte, low first.
inline void put_var(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  out.push_back(char(v));
}
inline void put_vstr(std::string& out, std::string_view s) {
  put_var(out, s.size());
  out.append(s);
}

/// A symbol: 0 and the 16 bytes of a deferred symbol's digits
/// (core::pack_deferred_symbol), or 1 and the text.
inline void put_symbol(std::string& out, std::string_view s) {
  std::string packed = core::pack_deferred_symbol(s);
  if (packed.empty()) {
    out.push_back(1);
    put_vstr(out, s);
    return;
  }
  out.push_back(0);
  out.append(packed);
}

inline uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | uint8_t(p[i]);
  return v;
}
inline uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | uint8_t(p[i]);
  return v;
}

inline void set_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = char((v >> (8 * i)) & 0xff);
}

/// The state of the cache file and its WAL that published images are true
/// for. Every write to either, by Kiln or by any other tool, changes a size
/// or a modification time; a WAL that is empty or absent is one state (the
/// last connection to close removes or empties it, after copying its frames
/// into the file, which changes the file's).
struct CacheState {
  uint64_t dev = 0, ino = 0;
  int64_t db_size = 0, db_mtime = 0, wal_size = 0, wal_mtime = 0;

  static CacheState of(const FileStamp& db, const FileStamp& wal) {
    CacheState s{db.dev, db.ino, db.size, db.mtime_ns, 0, 0};
    if (wal.present && wal.size > 0) {
      s.wal_size = wal.size;
      s.wal_mtime = wal.mtime_ns;
    }
    return s;
  }
  static CacheState at(const std::string& cache_path, const std::string& wal_path) {
    return of(FileStamp::at(cache_path), FileStamp::at(wal_path));
  }
  static CacheState in(const char* h) {
    return {get_u64(h + 16),          get_u64(h + 24),
            int64_t(get_u64(h + 80)), int64_t(get_u64(h + 88)),
            int64_t(get_u64(h + 96)), int64_t(get_u64(h + 104))};
  }
  bool operator==(const CacheState&) const = default;
};

/// The files' state, their modification times set first to the fine
/// clock's now. A file system stamps each write with its coarse clock (one
/// tick is 1-4 ms), so that another tool's write in the same tick as Kiln's
/// last could leave both a time and a size as they were; a time set between
/// two ticks is one that no write gives. Only the files' owner may set
/// their times: for another writer they stay as written, and that window
/// stays.
inline CacheState fresh_state(const std::string& cache_path, const std::string& wal_path) {
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;
  ::clock_gettime(CLOCK_REALTIME, &times[1]);
  (void)::utimensat(AT_FDCWD, cache_path.c_str(), times, AT_SYMLINK_NOFOLLOW);
  if (FileStamp::at(wal_path).size > 0)
    (void)::utimensat(AT_FDCWD, wal_path.c_str(), times, AT_SYMLINK_NOFOLLOW);
  return CacheState::at(cache_path, wal_path);
}

/// A header with this format's magic, version and checksum.
inline bool sound_header(const char* h) {
  return std::memcmp(h, kMagic, sizeof kMagic) == 0 && get_u32(h + 8) == kVersion &&
         get_u64(h + kHeaderSumAt) == hash64(std::string_view(h, kHeaderSumAt));
}

/// `h` stamped with `state`, its checksum made again.
inline void stamp_header(char* h, const CacheState& state) {
  set_u64(h + kStampAt, uint64_t(state.db_size));
  set_u64(h + kStampAt + 8, uint64_t(state.db_mtime));
  set_u64(h + kStampAt + 16, uint64_t(state.wal_size));
  set_u64(h + kStampAt + 24, uint64_t(state.wal_mtime));
  set_u64(h + kHeaderSumAt, hash64(std::string_view(h, kHeaderSumAt)));
}

/// Two headers of one publication, whatever their stamps.
inline bool same_publication(const char* a, const char* b) {
  return std::memcmp(a, b, kStampAt) == 0 &&
         std::memcmp(a + kTableSumAt, b + kTableSumAt, 8) == 0;
}

// Reads the table front to back; any read past its end fails the whole table.
struct Cursor {
  std::string_view rest;
  bool ok = true;

  const char* take(size_t n) {
    if (!ok || rest.size() < n) {
      ok = false;
      return nullptr;
    }
    const char* p = rest.data();
    rest.remove_prefix(n);
    return p;
  }
  uint32_t u32() {
    const char* p = take(4);
    return p ? get_u32(p) : 0;
  }
  uint64_t u64() {
    const char* p = take(8);
    return p ? get_u64(p) : 0;
  }
  uint64_t var() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const char* p = take(1);
      if (!p)
        return 0;
      v |= uint64_t(uint8_t(*p) & 0x7f) << shift;
      if (!(uint8_t(*p) & 0x80))
        return v;
    }
    ok = false; // more than ten bytes
    return 0;
  }
  std::string str() {
    uint64_t n = var();
    const char* p = n <= rest.size() ? take(size_t(n)) : (ok = false, nullptr);
    return p ? std::string(p, size_t(n)) : std::string();
  }
  std::string symbol() {
    const char* tag = take(1);
    if (!tag || *tag == 1)
      return tag ? str() : std::string();
    const char* p = *tag == 0 ? take(16) : (ok = false, nullptr);
    return p ? core::unpack_deferred_symbol(std::string_view(p, 16)) : std::string();
  }
  Hash128 key() {
    Hash128 k;
    k.lo = u64();
    k.hi = u64();
    return k;
  }
};

inline bool pread_all(int fd, char* out, size_t n, uint64_t at) {
  while (n > 0) {
    ssize_t got = ::pread(fd, out, n, off_t(at));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    out += got;
    n -= size_t(got);
    at += uint64_t(got);
  }
  return true;
}

inline std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

inline bool root_order(const PublishedRoot& a, const PublishedRoot& b) {
  if (a.library != b.library)
    return b.library;
  return a.name.name != b.name.name ? a.name.name < b.name.name : a.name.target < b.name.target;
}

inline Error damaged(const std::string& path, const std::string& why) {
  return make_error(Code::corrupt, "published images '" + path + "': " + why);
}

} // namespace kiln::storage::published_format
