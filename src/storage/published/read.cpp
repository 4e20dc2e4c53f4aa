// The reader of the published host images file (published.h; the format:
// format.h): PublishedImages opens it under the cache's trust rules, checks
// every byte it believes, and serves a load's lookups and images.
#include "storage/published/format.h"

#include "support/files.h"
#include "support/lz.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <new>
#include <tuple>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::storage {

using namespace published_format;

namespace {

/// How many times its bytes as stored a table may unpack to.
constexpr uint64_t kMaxTableRatio = 16;
/// A table larger than this is refused unread (a million roots' is about 90 MB).
constexpr uint64_t kMaxTableBytes = uint64_t(1) << 30;


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

} // namespace kiln::storage
