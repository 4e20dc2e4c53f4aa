// The writer of the published host images file (published.h; the format:
// format.h): each image once, packed with a dictionary of images, then the
// table, written to a temporary and renamed into place.
#include "storage/published/format.h"

#include "support/lz.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <map>
#include <tuple>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::storage {

using namespace published_format;

namespace {

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

} // namespace kiln::storage
