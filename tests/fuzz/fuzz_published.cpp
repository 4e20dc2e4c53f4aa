// Fuzz target: published host images (src/storage/published/read.cpp) made of
// arbitrary bytes beside a cache file, opened and every root's image read
// and unpacked (src/support/lz.cpp), as a loading process would. The
// harness makes the header name this cache file and the state it is in,
// and its two checksums right, so that mutations reach the table, the
// dictionary and the packed images rather than stopping at a checksum. An
// input that starts with 'T' is a table instead: four bytes of its root
// count, then the table as unpacked, which the harness packs behind a
// header of its own (an empty dictionary), so that mutations reach every
// field the table's parser reads. Every path must end in a clear error or
// the bytes, never a crash or an unbounded allocation.
#include "storage/published/published.h"
#include "support/hash.h"
#include "support/lz.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

std::string dir() {
  static std::string d = [] {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/kiln-fuzz-published-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      std::abort();
    return tmpl;
  }();
  return d;
}

void put_u64(std::string& s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s[at + size_t(i)] = char((v >> (8 * i)) & 0xff);
}

uint64_t get_u64(const std::string& s, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | uint8_t(s[at + size_t(i)]);
  return v;
}

void write_file(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != ssize_t(bytes.size()))
    std::abort();
  ::close(fd);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string cache = dir() + "/kiln.db";
  struct stat st;
  if (::lstat(cache.c_str(), &st) != 0) {
    write_file(cache, "not read: only its device and inode count");
    if (::lstat(cache.c_str(), &st) != 0)
      std::abort();
  }
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size >= 5 && data[0] == 'T') {
    std::string raw = bytes.substr(5), dict = kiln::lz_pack(""), table = kiln::lz_pack(raw);
    std::string h(128, '\0');
    h.replace(0, 8, "KILNPUB1");
    h[8] = 8; // the format version (published/format.h kVersion)
    h.replace(12, 4, bytes, 1, 4);
    put_u64(h, 32, table.size());
    put_u64(h, 40, 128 + dict.size() + table.size());
    put_u64(h, 48, 128);
    put_u64(h, 56, dict.size());
    put_u64(h, 64, 0);
    put_u64(h, 72, raw.size());
    bytes = h + dict + table;
  }
  // The header (128 bytes) names the cache file at 16 and 24, and the
  // state it and its WAL are in at 80 (sizes and times; there is no WAL);
  // the packed table ends the file (its size at 32, its checksum at 112);
  // the header's own checksum is at 120.
  if (bytes.size() >= 128) {
    put_u64(bytes, 16, uint64_t(st.st_dev));
    put_u64(bytes, 24, uint64_t(st.st_ino));
    put_u64(bytes, 80, uint64_t(st.st_size));
    put_u64(bytes, 88, uint64_t(st.st_mtim.tv_sec) * 1000000000 + uint64_t(st.st_mtim.tv_nsec));
    put_u64(bytes, 96, 0);
    put_u64(bytes, 104, 0);
    uint64_t table = get_u64(bytes, 32);
    if (table <= bytes.size() - 128)
      put_u64(bytes, 112,
              kiln::hash64(std::string_view(bytes).substr(bytes.size() - size_t(table))));
    put_u64(bytes, 120, kiln::hash64(std::string_view(bytes.data(), 120)));
  }
  write_file(kiln::storage::published_path(cache), bytes);
  auto published = kiln::storage::PublishedImages::open(cache);
  if (!published)
    return 0;
  for (const kiln::storage::PublishedRoot& r : (*published)->roots()) {
    (void)(*published)->find(r.name.name, r.name.target);
    (void)(*published)->closure_of(r);
    (void)(*published)->image(r);
  }
  return 0;
}
