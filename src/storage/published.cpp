// The published host images file and the load log (storage/published.h).
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
// `<cache>-loads`: 48-byte records: "KLOD", the low 32 bits of the XXH3-64
//   of the rest, the closure key, i64 time, i64 loads, i64 image hits.
#include "storage/published.h"

#include "core/keys.h"

#include "storage/local/file_trust.h"
#include "support/files.h"
#include "support/hash.h"
#include "support/lz.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <new>
#include <optional>
#include <tuple>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::storage {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'P', 'U', 'B', '1'};
constexpr uint32_t kVersion = 8;
constexpr size_t kHeaderBytes = 128;
constexpr size_t kStampAt = 80, kTableSumAt = 112, kHeaderSumAt = 120;
/// A root's flags: its closure is for its name's target; its image is its
/// closure's own (not a sibling's or a library's). (4 named the root job's
/// member in format 7.)
constexpr uint8_t kSameTarget = 1, kOwnImage = 2;
/// A kernel library's record, not a root's (they follow the roots).
constexpr uint8_t kLibrary = 8;
/// The file holds every target the record's name has.
constexpr uint8_t kAllTargets = 16;
/// The images' dictionary: 32 KiB packed 200 one-kernel images into the
/// fewest bytes with it, stored unpacked (84 KB; 16 KiB: 100 KB, 64 KiB:
/// 111 KB); stored packed, 64 KiB saves 3% more on every benchmark workload
/// in one cache, and costs each load twice the unpacking and copying.
constexpr size_t kDictionaryBytes = 32 << 10;
/// How many times its bytes as stored a table may unpack to.
constexpr uint64_t kMaxTableRatio = 16;
/// A table larger than this is refused unread (a million roots' is about 90 MB).
constexpr uint64_t kMaxTableBytes = uint64_t(1) << 30;

constexpr char kNoteMagic[4] = {'K', 'L', 'O', 'D'};
constexpr size_t kNoteBytes = 4 + 4 + 16 + 8 + 8 + 8; // magic, checksum, key, when, loads, hits
/// A load log larger than this is dropped unread: usage is advisory.
constexpr uint64_t kMaxLogBytes = uint64_t(64) << 20;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}
void put_key(std::string& out, const Hash128& k) {
  put_u64(out, k.lo);
  put_u64(out, k.hi);
}
/// LEB128: seven bits a byte, low first.
void put_var(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  out.push_back(char(v));
}
void put_vstr(std::string& out, std::string_view s) {
  put_var(out, s.size());
  out.append(s);
}

/// A symbol: 0 and the 16 bytes of a deferred symbol's digits
/// (core::pack_deferred_symbol), or 1 and the text.
void put_symbol(std::string& out, std::string_view s) {
  std::string packed = core::pack_deferred_symbol(s);
  if (packed.empty()) {
    out.push_back(1);
    put_vstr(out, s);
    return;
  }
  out.push_back(0);
  out.append(packed);
}

uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | uint8_t(p[i]);
  return v;
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | uint8_t(p[i]);
  return v;
}

void set_u64(char* p, uint64_t v) {
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
CacheState fresh_state(const std::string& cache_path, const std::string& wal_path) {
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
bool sound_header(const char* h) {
  return std::memcmp(h, kMagic, sizeof kMagic) == 0 && get_u32(h + 8) == kVersion &&
         get_u64(h + kHeaderSumAt) == hash64(std::string_view(h, kHeaderSumAt));
}

/// `h` stamped with `state`, its checksum made again.
void stamp_header(char* h, const CacheState& state) {
  set_u64(h + kStampAt, uint64_t(state.db_size));
  set_u64(h + kStampAt + 8, uint64_t(state.db_mtime));
  set_u64(h + kStampAt + 16, uint64_t(state.wal_size));
  set_u64(h + kStampAt + 24, uint64_t(state.wal_mtime));
  set_u64(h + kHeaderSumAt, hash64(std::string_view(h, kHeaderSumAt)));
}

/// Two headers of one publication, whatever their stamps.
bool same_publication(const char* a, const char* b) {
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

bool pread_all(int fd, char* out, size_t n, uint64_t at) {
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

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

bool root_order(const PublishedRoot& a, const PublishedRoot& b) {
  if (a.library != b.library)
    return b.library;
  return a.name.name != b.name.name ? a.name.name < b.name.name : a.name.target < b.name.target;
}

Error damaged(const std::string& path, const std::string& why) {
  return make_error(Code::corrupt, "published images '" + path + "': " + why);
}

/// Removes the temporaries of `path` (`path.tmpXXXXXX`, this user's) that a
/// writer which died between mkstemp and rename left. Called with the
/// cache's write lock held, under which every publication writes and
/// renames its own: one found then is no live writer's.
void remove_stale_temporaries(const std::string& path) {
  std::string dir = dir_of(path);
  size_t slash = path.rfind('/');
  std::string prefix = path.substr(slash == std::string::npos ? 0 : slash + 1) + ".tmp";
  DIR* d = ::opendir(dir.c_str());
  if (!d)
    return;
  while (const struct dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    if (name.size() != prefix.size() + 6 || name.substr(0, prefix.size()) != prefix)
      continue;
    std::string stale = dir + "/" + std::string(name);
    struct stat st;
    if (::lstat(stale.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid())
      ::unlink(stale.c_str());
  }
  ::closedir(d);
}


/// The images the roots hand, each once, in the order first named, and
/// which of them each root's is. Roots that share an image (a deferred
/// cycle's, a library's) hand the same bytes; other equal images are found
/// by checksum and size, then compared byte for byte (a 64-bit checksum can
/// be made to collide).
struct DistinctImages {
  std::vector<const std::string*> bytes;
  std::vector<uint64_t> checksums;
  std::vector<size_t> of_root;
};

DistinctImages distinct_images(const std::vector<PublishInput>& roots) {
  DistinctImages d;
  std::map<const std::string*, size_t> by_bytes; // bytes handed -> index
  std::multimap<std::pair<uint64_t, uint64_t>, size_t> by_sum; // checksum, size -> index
  for (const PublishInput& in : roots) {
    const std::string* bytes = in.image.get();
    auto [it, fresh] = by_bytes.try_emplace(bytes, d.bytes.size());
    if (fresh) {
      auto sum = std::make_pair(hash64(*bytes), uint64_t(bytes->size()));
      auto [same, end] = by_sum.equal_range(sum);
      while (same != end && *d.bytes[same->second] != *bytes)
        ++same;
      if (same != end) {
        it->second = same->second;
      } else {
        by_sum.emplace(sum, d.bytes.size());
        d.bytes.push_back(bytes);
        d.checksums.push_back(sum.first);
      }
    }
    d.of_root.push_back(it->second);
  }
  return d;
}

/// The dictionary: whole images at an even stride through them (the first
/// of each 32nd part), until 32 KiB, so that a cache of several kinds of
/// kernels has each kind in it: every benchmark workload in one cache
/// packed its 1,016 images (1.86 MB) to 118 KB so, 437 KB with the first
/// images alone.
std::string image_dictionary(const std::vector<const std::string*>& images) {
  std::string dict;
  const size_t stride = std::max<size_t>(1, images.size() / 32);
  for (size_t k = 0; k < images.size() && dict.size() < kDictionaryBytes; k += stride)
    dict.append(*images[k], 0, kDictionaryBytes - dict.size());
  return dict;
}

/// The table's CPUs, each (target, cpu, features) once; returns the index
/// of each root's.
std::vector<uint32_t> put_cpus(std::string& t, const std::vector<PublishInput>& roots) {
  std::map<std::tuple<std::string, std::string, std::string>, uint32_t> cpus;
  std::vector<uint32_t> cpu_of_root;
  for (const PublishInput& in : roots) {
    const JobRecord& j = in.root.root;
    auto [it, fresh] =
        cpus.emplace(std::make_tuple(j.target, j.cpu, j.features), uint32_t(cpus.size()));
    cpu_of_root.push_back(it->second);
  }
  std::vector<const std::tuple<std::string, std::string, std::string>*> by_index(cpus.size());
  for (const auto& [cpu, index] : cpus)
    by_index[index] = &cpu;
  put_var(t, by_index.size());
  for (const auto* cpu : by_index) {
    put_vstr(t, std::get<0>(*cpu));
    put_vstr(t, std::get<1>(*cpu));
    put_vstr(t, std::get<2>(*cpu));
  }
  return cpu_of_root;
}

/// The table's member sets, each member list handed once and equal lists
/// handed apart once too; returns the index of each root's.
std::vector<uint32_t> put_member_sets(std::string& t, const std::vector<PublishInput>& roots) {
  std::map<const std::vector<ClosureMember>*, uint32_t> set_of_list;
  std::map<std::string, uint32_t> sets; // a set's bytes -> its index
  std::vector<const std::string*> set_order;
  std::vector<uint32_t> set_of_root;
  for (const PublishInput& in : roots) {
    auto [list, first] = set_of_list.try_emplace(in.members.get(), 0);
    if (first) {
      std::string bytes;
      put_var(bytes, in.members->size());
      for (const ClosureMember& m : *in.members) {
        put_symbol(bytes, m.symbol);
        put_vstr(bytes, m.entry);
      }
      auto [it, fresh] = sets.emplace(std::move(bytes), uint32_t(sets.size()));
      if (fresh)
        set_order.push_back(&it->first);
      list->second = it->second;
    }
    set_of_root.push_back(list->second);
  }
  put_var(t, set_order.size());
  for (const std::string* set : set_order)
    t += *set;
  return set_of_root;
}

/// The table: CPUs, member sets, images, then one record per root. Images
/// lie one after another after the dictionary, in the order listed: their
/// offsets are not stored.
std::string make_table(const std::vector<PublishInput>& roots, const DistinctImages& images,
                       const std::vector<std::string>& packed) {
  std::string t;
  std::vector<uint32_t> cpu_of_root = put_cpus(t, roots);
  std::vector<uint32_t> set_of_root = put_member_sets(t, roots);
  put_var(t, images.bytes.size());
  for (size_t k = 0; k < images.bytes.size(); ++k) {
    put_var(t, packed[k].size());
    put_var(t, images.bytes[k]->size());
    put_u64(t, images.checksums[k]);
  }
  for (size_t i = 0; i < roots.size(); ++i) {
    const PublishedRoot& r = roots[i].root;
    uint8_t flags = (r.closure.target == r.name.target ? kSameTarget : 0) |
                    (r.image_of == r.closure.key ? kOwnImage : 0) |
                    (r.library ? kLibrary : 0) | (r.all_targets ? kAllTargets : 0);
    put_vstr(t, r.name.name);
    put_vstr(t, r.name.target);
    put_key(t, r.closure.key);
    t.push_back(char(flags));
    if (!(flags & kSameTarget))
      put_vstr(t, r.closure.target);
    put_var(t, set_of_root[i]);
    put_var(t, cpu_of_root[i]);
    put_var(t, images.of_root[i]);
    if (!(flags & kOwnImage))
      put_key(t, r.image_of);
  }
  return t;
}

/// The parts of the file as stored: the dictionary and the images after
/// the header; the table, packed (names, keys and member sets repeat),
/// ends the file.
struct FileParts {
  uint32_t roots = 0;
  std::string packed_dict;
  size_t dict_bytes = 0; ///< unpacked
  std::vector<std::string> images;
  std::string table;
  size_t table_bytes = 0; ///< unpacked
};

/// The whole file, its header stamped with the state the cache file and its
/// WAL are in now, under the write lock: the state the file is true for.
std::string whole_file(const std::string& cache_path, const struct stat& cache_stat,
                       const FileParts& parts) {
  const uint64_t dict_at = kHeaderBytes;
  uint64_t file_bytes = dict_at + parts.packed_dict.size() + parts.table.size();
  for (const std::string& img : parts.images)
    file_bytes += img.size();
  std::string out;
  out.reserve(size_t(file_bytes));
  out.append(kMagic, sizeof kMagic);
  put_u32(out, kVersion);
  put_u32(out, parts.roots);
  put_u64(out, uint64_t(cache_stat.st_dev));
  put_u64(out, uint64_t(cache_stat.st_ino));
  put_u64(out, parts.table.size());
  put_u64(out, file_bytes);
  put_u64(out, dict_at);
  put_u64(out, parts.packed_dict.size());
  put_u64(out, parts.dict_bytes);
  put_u64(out, parts.table_bytes);
  out.append(kTableSumAt - kStampAt, '\0'); // the stamp, below
  put_u64(out, hash64(parts.table));
  put_u64(out, 0); // the header's checksum, below
  stamp_header(out.data(), fresh_state(cache_path, cache_path + "-wal"));
  out += parts.packed_dict;
  for (const std::string& img : parts.images)
    out += img;
  out += parts.table;
  return out;
}

/// `bytes` written to a temporary beside `path` (with `mode`), renamed over
/// it. No fsync: a file torn by a crash fails its checks and reads as absent.
Status replace_file(const std::string& path, const std::string& bytes, mode_t mode) {
  std::string tmp = path + ".tmpXXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return make_error(Code::unavailable,
                      "cannot create a file beside '" + path + "': " + std::strerror(errno));
  size_t off = 0;
  bool ok = ::fchmod(fd, mode) == 0;
  while (ok && off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    off += ok ? size_t(n) : 0;
  }
  int err = errno;
  ok = (::close(fd) == 0) && ok;
  if (ok && ::rename(tmp.c_str(), path.c_str()) == 0)
    return Status::ok();
  err = errno ? errno : err;
  ::unlink(tmp.c_str());
  return make_error(Code::unavailable, "cannot write '" + path + "': " + std::strerror(err));
}

} // namespace

std::string published_path(const std::string& cache_path) { return cache_path + "-images"; }
std::string load_log_path(const std::string& cache_path) { return cache_path + "-loads"; }

Status write_published(const std::string& cache_path, const struct stat& cache_stat,
                       std::vector<PublishInput> roots) {
  std::string path = published_path(cache_path);
  remove_stale_temporaries(path);
  if (roots.empty()) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return make_error(Code::unavailable, "cannot remove '" + path + "': " + std::strerror(errno));
    return Status::ok();
  }
  std::sort(roots.begin(), roots.end(),
            [](const PublishInput& a, const PublishInput& b) { return root_order(a.root, b.root); });
  // Each image once, packed with a dictionary of images. For 200
  // one-kernel images of 3 KB (603 KB), the dictionary and the packed
  // images took 84 KB; 170 KB with the first image alone as the
  // dictionary, 312 KB without one.
  DistinctImages images = distinct_images(roots);
  std::string dict = image_dictionary(images.bytes);
  FileParts parts;
  parts.roots = uint32_t(roots.size());
  parts.images.reserve(images.bytes.size());
  LzPacker packer(dict);
  for (const std::string* img : images.bytes)
    parts.images.push_back(packer.pack(*img));
  // The dictionary is stored packed: the zeros and repeats of a few images
  // (a 1-image cache: 2.5 KB of dictionary stored as about 1 KB).
  parts.packed_dict = lz_pack(dict);
  parts.dict_bytes = dict.size();
  std::string raw_table = make_table(roots, images, parts.images);
  parts.table = lz_pack(raw_table);
  parts.table_bytes = raw_table.size();
  return replace_file(path, whole_file(cache_path, cache_stat, parts), cache_stat.st_mode & 0644);
}

namespace {

/// The cache's files, by the cache's own rules: its directory, the cache
/// file and every side file, the published images included, by owner and
/// mode, without following a link. not_found where none is to be read.
Result<CacheFiles> files_to_read(const std::string& cache_path) {
  KILN_TRY_ASSIGN(auto owners, TrustedOwners::from_env());
  KILN_TRY_ASSIGN(CacheFiles files, check_cache_files(cache_path, dir_of(cache_path), owners));
  if (!files.db.present || !files.images.present)
    return make_error(Code::not_found, "no published images beside '" + cache_path + "'");
  // On a network file system a client may see another's removal of the
  // file late: none is published there, and one found is not believed.
  if (std::string network = network_fs_kind(cache_path); !network.empty())
    return make_error(Code::not_found, "'" + cache_path + "' is on a network file system (" +
                                           network + "): published images are not read there");
  return files;
}

/// What `fd` opened: the regular file the check found, by one name only.
Result<struct stat> stat_opened(int fd, const std::string& path, const CacheFiles& files) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      !files.images.same_file(FileStamp::of(st)))
    return make_error(Code::not_found, "'" + path + "' changed while it was opened");
  // One name only: a commit's removal of that name is how a handle that
  // holds it open learns it is old (current()); a second link (a backup's
  // hard link) would keep it looking present.
  if (st.st_nlink != 1)
    return make_error(Code::not_found, "'" + path + "' has " + std::to_string(st.st_nlink) +
                                           " links, not one: it is not read");
  return st;
}

/// The header, read into `h`: sound, of this format, published from this
/// cache file and stamped with the state it and its WAL are in.
Status read_header(int fd, uint64_t file_bytes, const std::string& path,
                   const std::string& cache_path, const CacheFiles& files, char* h) {
  if (file_bytes < kHeaderBytes || !pread_all(fd, h, kHeaderBytes, 0))
    return damaged(path, "shorter than its header");
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0)
    return damaged(path, "not a published images file");
  if (get_u64(h + kHeaderSumAt) != hash64(std::string_view(h, kHeaderSumAt)))
    return damaged(path, "its header fails its checksum");
  if (get_u32(h + 8) != kVersion)
    return damaged(path, "format version " + std::to_string(get_u32(h + 8)) + ", not " +
                             std::to_string(kVersion));
  if (get_u64(h + 16) != files.db.dev || get_u64(h + 24) != files.db.ino)
    return damaged(path, "published from another cache file than '" + cache_path + "'");
  // Written since, by a tool other than Kiln (Kiln's commits remove the
  // file first), or copied over: what it holds may no longer be true.
  if (!(CacheState::in(h) == CacheState::of(files.db, files.wal)))
    return make_error(Code::not_found, "published images '" + path +
                                           "' are older than the cache file: it was written "
                                           "since they were published");
  return Status::ok();
}

/// Where the header says the parts lie, and their sizes as stored and
/// unpacked.
struct Layout {
  uint64_t table_bytes, file_bytes, dict_at, dict_bytes, raw_dict_bytes, raw_table_bytes;

  static Layout in(const char* h) {
    return {get_u64(h + 32), get_u64(h + 40), get_u64(h + 48),
            get_u64(h + 56), get_u64(h + 64), get_u64(h + 72)};
  }
  uint64_t table_at() const { return file_bytes - table_bytes; }
};

/// The table, read, checked against its checksum and unpacked.
Result<std::string> read_table(int fd, uint64_t size, const std::string& path, const char* h,
                               const Layout& at) {
  if (at.file_bytes != size)
    return damaged(path, "says it holds " + std::to_string(at.file_bytes) + " bytes, but holds " +
                             std::to_string(size));
  if (at.table_bytes > kMaxTableBytes || at.table_bytes > at.file_bytes - kHeaderBytes)
    return damaged(path, "its table of " + std::to_string(at.table_bytes) +
                             " bytes does not fit the file");
  std::string packed_table(size_t(at.table_bytes), '\0');
  if (!pread_all(fd, packed_table.data(), packed_table.size(), at.table_at()))
    return damaged(path, "cannot read its table");
  if (hash64(packed_table) != get_u64(h + kTableSumAt))
    return damaged(path, "its table fails its checksum");
  // A table is mostly keys, which do not pack (1.07 times for every
  // benchmark workload in one cache): one that claims to unpack to 16 times
  // its bytes is refused before anything is reserved, so that what is held
  // for it stays in proportion to the file (a root is a few hundred bytes).
  if (at.raw_table_bytes > kMaxTableBytes ||
      at.raw_table_bytes > std::max<uint64_t>(kMaxTableRatio * at.table_bytes, 64 << 10))
    return damaged(path, "its table claims " + std::to_string(at.raw_table_bytes) +
                             " bytes unpacked from " + std::to_string(at.table_bytes));
  auto unpacked = lz_unpack(packed_table, size_t(at.raw_table_bytes));
  if (!unpacked)
    return damaged(path, "its table: " + unpacked.error().message);
  return unpacked;
}

/// The dictionary: after the header, before the table, at most 32 KiB
/// unpacked. What it holds is checked through every image it unpacks
/// (their checksums).
Result<std::string> read_dictionary(int fd, const std::string& path, const Layout& at) {
  if (at.dict_at != kHeaderBytes || at.raw_dict_bytes > kDictionaryBytes ||
      at.dict_bytes > at.table_at() - at.dict_at)
    return damaged(path, "its dictionary does not fit the file");
  std::string packed_dict(size_t(at.dict_bytes), '\0');
  if (!pread_all(fd, packed_dict.data(), packed_dict.size(), at.dict_at))
    return damaged(path, "cannot read its dictionary");
  auto dict = lz_unpack(packed_dict, size_t(at.raw_dict_bytes));
  if (!dict)
    return damaged(path, "its dictionary: " + dict.error().message);
  return dict;
}

/// An image's place in the file, and its size and checksum as loaded.
struct ImagePlace {
  uint64_t offset, size, raw_size, checksum;
};

/// The table's records, read front to back: its CPUs, member sets, images
/// and roots. Every count is checked against the bytes its records would
/// need at the least, before anything is reserved for them; and what the
/// records take in memory is held to a budget in proportion to the file: a
/// table unpacks to up to 16 times its bytes, and a record of a few bytes
/// (a CPU's three empty strings) takes hundreds once read. A 1 MB file that
/// claimed five million CPUs took 1.5 GB. Real files take about three times
/// their size.
class TableReader {
public:
  TableReader(const std::string& path, std::string_view table, uint32_t roots,
              uint64_t file_bytes)
      : c_{table}, path_(path), table_bytes_(table.size()), roots_(roots),
        budget_((uint64_t(16) << 20) + 8 * file_bytes) {}

  Status cpus(std::vector<JobRecord>& cpus);
  Status member_sets(std::vector<std::vector<ClosureMember>>& sets);
  Result<std::vector<ImagePlace>> images(uint64_t images_at, uint64_t table_at);
  Status roots(std::vector<PublishedRoot>& roots, size_t sets, const std::vector<JobRecord>& cpus,
               const std::vector<ImagePlace>& images);

private:
  Status too_many(uint64_t n, size_t least, const char* what) const {
    if (c_.ok && n <= c_.rest.size() / least)
      return Status::ok();
    return damaged(path_, "it claims " + std::to_string(n) + " " + what + " in a " +
                              std::to_string(table_bytes_) + "-byte table");
  }
  // Each CPU, member set and image is some root's: no more of them than
  // roots, nor anything parsed twice over for each root that shares it.
  Status more_than_roots(uint64_t n, const char* what) const {
    if (n <= roots_)
      return Status::ok();
    return damaged(path_, "it claims " + std::to_string(n) + " " + what + " for " +
                              std::to_string(roots_) + " roots");
  }
  bool over_budget(uint64_t n) {
    used_ += n;
    return used_ > budget_;
  }
  Error too_big() const {
    return damaged(path_, "its records would take more than " + std::to_string(budget_) +
                              " bytes of memory");
  }

  Cursor c_;
  const std::string& path_;
  size_t table_bytes_;
  uint32_t roots_;
  const uint64_t budget_;
  uint64_t used_ = 0;
};

Status TableReader::cpus(std::vector<JobRecord>& cpus) {
  uint64_t cpu_count = c_.var();
  KILN_TRY(too_many(cpu_count, 3, "CPUs")); // three string lengths each
  KILN_TRY(more_than_roots(cpu_count, "CPUs"));
  for (uint64_t i = 0; i < cpu_count && c_.ok; ++i) {
    JobRecord j;
    j.target = c_.str();
    j.cpu = c_.str();
    j.features = c_.str();
    if (over_budget(sizeof(JobRecord) + j.target.size() + j.cpu.size() + j.features.size()))
      return too_big();
    cpus.push_back(std::move(j));
  }
  return Status::ok();
}

Status TableReader::member_sets(std::vector<std::vector<ClosureMember>>& sets) {
  uint64_t set_count = c_.var();
  KILN_TRY(too_many(set_count, 1, "member sets"));
  KILN_TRY(more_than_roots(set_count, "member sets"));
  for (uint64_t i = 0; i < set_count && c_.ok; ++i) {
    std::vector<ClosureMember>& set = sets.emplace_back();
    uint64_t members = c_.var();
    KILN_TRY(too_many(members, 3, "members")); // a symbol (2 bytes at least) and an entry
    if (over_budget(sizeof set))
      return too_big();
    for (uint64_t m = 0; m < members && c_.ok; ++m) {
      ClosureMember cm;
      cm.symbol = c_.symbol();
      cm.entry = c_.str();
      if (over_budget(sizeof cm + cm.symbol.size() + cm.entry.size()))
        return too_big();
      set.push_back(std::move(cm));
    }
  }
  if (!c_.ok)
    return damaged(path_, "its table ends inside its CPUs or member sets");
  return Status::ok();
}

/// The images, one after another from `images_at` (the dictionary's end)
/// to the table.
Result<std::vector<ImagePlace>> TableReader::images(uint64_t images_at, uint64_t table_at) {
  uint64_t image_count = c_.var();
  KILN_TRY(too_many(image_count, 10, "images"));
  KILN_TRY(more_than_roots(image_count, "images"));
  if (over_budget(image_count * sizeof(ImagePlace)))
    return too_big();
  std::vector<ImagePlace> images(static_cast<size_t>(image_count));
  uint64_t at = images_at;
  for (ImagePlace& im : images) {
    im.offset = at;
    im.size = c_.var();
    im.raw_size = c_.var();
    im.checksum = c_.u64();
    if (!c_.ok || im.size > table_at - at)
      return damaged(path_, "its images do not fit the file");
    at += im.size;
  }
  if (at != table_at)
    return damaged(path_, "its images end at " + std::to_string(at) + ", not at its table (" +
                              std::to_string(table_at) + ")");
  return images;
}

/// The roots, in order, each naming a member set, a CPU and an image that
/// the table holds; the table must end with the last.
Status TableReader::roots(std::vector<PublishedRoot>& roots, size_t sets,
                          const std::vector<JobRecord>& cpus,
                          const std::vector<ImagePlace>& images) {
  KILN_TRY(too_many(roots_, 22, "roots"));
  if (over_budget(uint64_t(roots_) * sizeof(PublishedRoot)))
    return too_big();
  roots.reserve(roots_);
  for (uint32_t i = 0; i < roots_ && c_.ok; ++i) {
    PublishedRoot r;
    r.name.name = c_.str();
    r.name.target = c_.str();
    r.closure.key = c_.key();
    r.name.closure = r.closure.key;
    const char* flags = c_.take(1);
    if (!flags)
      break;
    r.library = (*flags & kLibrary) != 0;
    r.all_targets = (*flags & kAllTargets) != 0;
    r.closure.target = (*flags & kSameTarget) ? r.name.target : c_.str();
    uint64_t set = c_.var();
    if (!c_.ok || set >= sets)
      return damaged(path_, "a root names member set " + std::to_string(set) + " of " +
                                std::to_string(sets));
    r.member_set = uint32_t(set);
    uint64_t cpu = c_.var();
    if (!c_.ok || cpu >= cpus.size())
      return damaged(path_, "a root names CPU " + std::to_string(cpu) + " of " +
                                std::to_string(cpus.size()));
    r.cpu = uint32_t(cpu);
    r.root.target = cpus[size_t(cpu)].target;
    uint64_t image = c_.var();
    if (!c_.ok || image >= images.size())
      return damaged(path_, "a root names image " + std::to_string(image) + " of " +
                                std::to_string(images.size()));
    r.image_of = (*flags & kOwnImage) ? r.closure.key : c_.key();
    const ImagePlace& im = images[size_t(image)];
    r.image_offset = im.offset;
    r.image_size = im.size;
    r.image_raw_size = im.raw_size;
    r.image_checksum = im.checksum;
    if (!c_.ok)
      break;
    if (over_budget(r.name.name.size() + r.name.target.size() + r.closure.target.size() +
                    r.root.target.size()))
      return too_big();
    if (!roots.empty() && !root_order(roots.back(), r))
      return damaged(path_, "its roots are not in order");
    roots.push_back(std::move(r));
  }
  if (!c_.ok || !c_.rest.empty() || roots.size() != roots_)
    return damaged(path_, "its table does not hold the " + std::to_string(roots_) +
                              " roots it claims");
  return Status::ok();
}

} // namespace

Result<std::unique_ptr<PublishedImages>> PublishedImages::open(const std::string& cache_path) {
  // Out of memory reading it (a file crafted to claim more than the budget
  // below lets through, on a machine with less): not believed, and the
  // load reads the cache file.
  try {
    return read(cache_path);
  } catch (const std::bad_alloc&) {
    return make_error(Code::not_found,
                      "out of memory reading the published images of '" + cache_path + "'");
  }
}

Result<std::unique_ptr<PublishedImages>> PublishedImages::read(const std::string& cache_path) {
  std::string path = published_path(cache_path);
  KILN_TRY_ASSIGN(CacheFiles files, files_to_read(cache_path));
  std::unique_ptr<PublishedImages> p(new PublishedImages());
  p->path_ = path;
  p->cache_mode_ = files.db_stat.st_mode & 0666;
  p->writable_ = ::access(files.dir.c_str(), W_OK) == 0;
  // Not blocking: whatever was put in its place since the check (a FIFO)
  // must not hold the open.
  p->fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (p->fd_ < 0)
    return make_error(Code::not_found, "cannot open '" + path + "': " + std::strerror(errno));
  KILN_TRY_ASSIGN(struct stat st, stat_opened(p->fd_, path, files));
  p->dev_ = uint64_t(st.st_dev);
  p->ino_ = uint64_t(st.st_ino);
  p->size_bytes_ = uint64_t(st.st_size);

  char h[kHeaderBytes];
  KILN_TRY(read_header(p->fd_, p->size_bytes_, path, cache_path, files, h));
  p->cache_path_ = cache_path;
  p->wal_path_ = cache_path + "-wal";
  p->header_.assign(h, kHeaderBytes);
  const Layout at = Layout::in(h);
  KILN_TRY_ASSIGN(std::string table, read_table(p->fd_, p->size_bytes_, path, h, at));
  KILN_TRY_ASSIGN(p->dict_, read_dictionary(p->fd_, path, at));

  TableReader records(path, table, get_u32(h + 12), p->size_bytes_);
  KILN_TRY(records.cpus(p->cpus_));
  KILN_TRY(records.member_sets(p->sets_));
  KILN_TRY_ASSIGN(auto images, records.images(at.dict_at + at.dict_bytes, at.table_at()));
  KILN_TRY(records.roots(p->roots_, p->sets_.size(), p->cpus_, images));
  return p;
}

PublishedImages::~PublishedImages() {
  if (fd_ >= 0)
    ::close(fd_);
}

namespace {

/// The first record at or after (library, name, target) in order.
std::vector<PublishedRoot>::const_iterator lower_in(const std::vector<PublishedRoot>& roots,
                                                   bool library, std::string_view name,
                                                   std::string_view target) {
  auto before = [&](const PublishedRoot& r) {
    if (r.library != library)
      return library;
    return std::string_view(r.name.name) != name ? std::string_view(r.name.name) < name
                                                 : std::string_view(r.name.target) < target;
  };
  return std::partition_point(roots.begin(), roots.end(), before);
}

const PublishedRoot* find_in(const std::vector<PublishedRoot>& roots, bool library,
                             std::string_view name, std::string_view target) {
  auto it = lower_in(roots, library, name, target);
  if (it == roots.end() || it->library != library || it->name.name != name ||
      it->name.target != target)
    return nullptr;
  return &*it;
}

} // namespace

std::vector<const PublishedRoot*> PublishedImages::targets_of(std::string_view name,
                                                             bool library) const {
  std::vector<const PublishedRoot*> out;
  for (auto it = lower_in(roots_, library, name, "");
       it != roots_.end() && it->library == library && it->name.name == name; ++it)
    out.push_back(&*it);
  return out;
}

const PublishedRoot* PublishedImages::find(std::string_view name, std::string_view target) const {
  return find_in(roots_, false, name, target);
}

const PublishedRoot* PublishedImages::find_library(std::string_view name,
                                                   std::string_view target) const {
  return find_in(roots_, true, name, target);
}

const PublishedRoot* PublishedImages::find_closure(const Hash128& key,
                                                   std::string_view target) const {
  // Sorted at the first load by key, not at every open.
  std::call_once(by_closure_once_, [this] {
    by_closure_.resize(roots_.size());
    for (uint32_t i = 0; i < by_closure_.size(); ++i)
      by_closure_[i] = i;
    std::sort(by_closure_.begin(), by_closure_.end(), [&](uint32_t a, uint32_t b) {
      const ClosureRecord &x = roots_[a].closure, &y = roots_[b].closure;
      return std::tie(x.key.hi, x.key.lo, x.target) < std::tie(y.key.hi, y.key.lo, y.target);
    });
  });
  auto it = std::partition_point(by_closure_.begin(), by_closure_.end(), [&](uint32_t i) {
    const ClosureRecord& c = roots_[i].closure;
    return std::tie(c.key.hi, c.key.lo) != std::tie(key.hi, key.lo)
               ? std::tie(c.key.hi, c.key.lo) < std::tie(key.hi, key.lo)
               : std::string_view(c.target) < target;
  });
  if (it == by_closure_.end() || !(roots_[*it].closure.key == key) ||
      roots_[*it].closure.target != target)
    return nullptr;
  return &roots_[*it];
}

ClosureRecord PublishedImages::closure_of(const PublishedRoot& root) const {
  ClosureRecord c = root.closure;
  c.members = sets_.at(root.member_set);
  return c;
}

Result<std::string> PublishedImages::image(const PublishedRoot& root) const {
  std::string packed(size_t(root.image_size), '\0');
  if (!pread_all(fd_, packed.data(), packed.size(), root.image_offset))
    return damaged(path_, "cannot read the image of '" + root.name.name + "'");
  auto bytes = lz_unpack(packed, size_t(root.image_raw_size), dict_);
  if (!bytes)
    return damaged(path_, "the image of '" + root.name.name + "': " + bytes.error().message);
  if (hash64(*bytes) != root.image_checksum)
    return damaged(path_, "the image of '" + root.name.name + "' fails its checksum");
  return bytes;
}

bool PublishedImages::current() const {
  if (gone_.load(std::memory_order_relaxed))
    return false;
  // Removed by a commit, or replaced by a publication since (a rename over
  // it): no name links the file opened any more, for good.
  struct stat st;
  if (::fstat(fd_, &st) != 0 || st.st_nlink != 1 || uint64_t(st.st_size) != size_bytes_) {
    gone_.store(true, std::memory_order_relaxed);
    return false;
  }
  // The cache file and its WAL: once per tick of the coarse clock (1-4 ms),
  // two lstats that a warm load (12 us) would otherwise pay every time. A
  // write by another tool is seen from the next tick on; Kiln's own commits
  // at once (the fstat above).
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  const int64_t tick = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  if (checked_at_.load(std::memory_order_relaxed) == tick)
    return true;
  CacheState now = CacheState::at(cache_path_, wal_path_);
  std::lock_guard lock(header_mu_);
  if (now == CacheState::in(header_.data())) {
    checked_at_.store(tick, std::memory_order_relaxed);
    return true;
  }
  // Stamped anew since it was opened (PublishedHold): the header says so.
  char h[kHeaderBytes];
  if (!pread_all(fd_, h, kHeaderBytes, 0) || !sound_header(h) ||
      !same_publication(h, header_.data()) || !(CacheState::in(h) == now))
    return false;
  header_.assign(h, kHeaderBytes);
  checked_at_.store(tick, std::memory_order_relaxed);
  return true;
}

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
