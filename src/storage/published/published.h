// Published host images: for each host root and host kernel library of a
// cache, what a load reads (its closure with the members' entries, the CPU
// its root job was built for, the checked image), written beside the cache file as `<cache>-images`
// so that a process that only loads host code reads that one file, with a
// few system calls and without SQLite, instead of opening the cache file.
//
// The cache file stays the one truth; the published file is a copy of part
// of it that is only ever as new as the file, never newer nor older:
//  - every commit to the cache file removes it first, under SQLite's write
//    lock, before the commit is visible (storage/local/database.cpp), except
//    the commits of usage alone (recency, counters, leases, memos);
//  - a new one is written, under that lock too, from what the cache file
//    holds then (Store::publish_images), and renamed into place;
//  - it names the cache file (device and inode) it was published from, and
//    a load reads it only beside that file;
//  - it carries the state of the cache file and its WAL (sizes and times)
//    it is true for, and a load reads it only while they are in that
//    state: a write by any other tool (SQLite's shell, a copy over the
//    file) changes one, and the load reads the cache file. Kiln's own
//    changes that leave what it holds true (a commit of usage alone, a
//    checkpoint) stamp it anew (PublishedHold);
//  - it obeys the cache's trust rules (storage/file_trust.h: owner,
//    mode, no link), and every byte it holds is checked (checksums, bounds)
//    before it is believed: a damaged or foreign one reads as absent, and
//    the load goes to the cache file.
// A load that holds it open while a writer commits reads what was true
// before that commit, as a load that started a moment earlier would.
//
// Loads served from it are noted in `<cache>-loads` (append-only records of
// which closures were used, and the counters), which the cache file takes
// in at its next statistics, gc or publication (absorb_load_log): a loading
// process writes one record per image to that file, not a SQLite
// transaction.
#pragma once

#include "storage/records.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <sys/types.h>
#include <vector>

namespace kiln::storage {

/// `<cache>-images` and `<cache>-loads`.
std::string published_path(const std::string& cache_path);
std::string load_log_path(const std::string& cache_path);

/// One host root, or host library, as a load needs it.
struct PublishedRoot {
  /// A kernel library's (kiln_library_load): its name, target and closure.
  bool library = false;
  /// The file holds every target its name has (of roots, or of libraries):
  /// no GPU one, none left out. A load with no target can then choose.
  bool all_targets = false;
  NameRecord name;       ///< name, target and closure
  /// The closure; read, its members are left in the file's member sets
  /// (closure_of fills them) and no job key is read (neither the root
  /// job's nor a member's: a load finds code by symbol and entry).
  ClosureRecord closure;
  uint32_t member_set = 0;
  /// The root job's target, cpu and features only (and its key, written
  /// from the cache file); read, its target only, its CPU being the file's
  /// record `cpu` (PublishedImages::cpu): roots built for one CPU share its
  /// kilobyte of features.
  JobRecord root;
  uint32_t cpu = 0;
  Hash128 image_of;      ///< whose image row the image is (the closure's own, a sibling's)
  /// Where its image lies packed, its size so, and its size and XXH3-64 as
  /// loaded (support/lz.h).
  uint64_t image_offset = 0, image_size = 0, image_raw_size = 0, image_checksum = 0;
};

/// What Store::publish_images hands the writer: a root, its closure's
/// members (`root.closure.members` is not read: the closures of one member
/// set, a deferred cycle's roots, share one list) and its image bytes
/// (shared by the roots one image serves).
struct PublishInput {
  PublishedRoot root;
  std::shared_ptr<const std::vector<ClosureMember>> members;
  std::shared_ptr<const std::string> image;
};

/// Writes `<cache>-images` for `roots` beside the cache file `cache_path`
/// (`cache_stat`: its lstat, whose device and inode the file names and whose
/// mode it takes) through a temporary file renamed into place. With no
/// roots, removes it instead. Called with the cache's write lock held: it
/// first removes this user's temporaries that a writer which died left.
Status write_published(const std::string& cache_path, const struct stat& cache_stat,
                       std::vector<PublishInput> roots);

/// A published file, opened and checked.
class PublishedImages {
public:
  /// Opens `<cache>-images` beside `cache_path`: not_found if there is none
  /// (or no cache file); unavailable if the cache's files fail the trust
  /// rules; corrupt if it is damaged or names another cache file.
  static Result<std::unique_ptr<PublishedImages>> open(const std::string& cache_path);
  ~PublishedImages();
  PublishedImages(const PublishedImages&) = delete;
  PublishedImages& operator=(const PublishedImages&) = delete;

  /// The root `name` names for `target`, or null.
  const PublishedRoot* find(std::string_view name, std::string_view target) const;
  /// The library `name` for `target`, or null.
  const PublishedRoot* find_library(std::string_view name, std::string_view target) const;
  /// Every target the root (or library) `name` has here, in order.
  std::vector<const PublishedRoot*> targets_of(std::string_view name, bool library) const;
  /// A root or library whose closure is `key`, for `target`, or null.
  const PublishedRoot* find_closure(const Hash128& key, std::string_view target) const;
  /// `root`'s closure with its members' symbols and entries (no job keys).
  ClosureRecord closure_of(const PublishedRoot& root) const;
  /// The CPU `root`'s job was built for: its target, cpu and features.
  const JobRecord& cpu(const PublishedRoot& root) const { return cpus_.at(root.cpu); }
  size_t cpu_count() const { return cpus_.size(); }
  /// Its image, read and checked against its checksum (corrupt otherwise).
  Result<std::string> image(const PublishedRoot& root) const;
  /// Whether `<cache>-images` is still the file opened (no commit removed or
  /// replaced it since: an fstat) and the cache file and its WAL are in the
  /// state it is stamped with (two lstats, at most once per tick of the
  /// coarse clock). Once removed or replaced, it is never current again,
  /// and this is one load of a flag.
  bool current() const;
  /// The file's inode, to tell this publication from another.
  uint64_t inode() const { return ino_; }
  size_t size() const { return roots_.size(); }
  /// Every root, in (name, target) order, then every library.
  const std::vector<PublishedRoot>& roots() const { return roots_; }
  /// The cache file's mode, which `<cache>-loads` is created with.
  mode_t cache_mode() const { return cache_mode_; }
  bool writable() const { return writable_; }

private:
  PublishedImages() = default;
  static Result<std::unique_ptr<PublishedImages>> read(const std::string& cache_path);
  std::string path_, cache_path_, wal_path_;
  int fd_ = -1;
  uint64_t dev_ = 0, ino_ = 0, size_bytes_ = 0;
  mode_t cache_mode_ = 0600;
  bool writable_ = false;
  std::vector<PublishedRoot> roots_; ///< sorted by (library, name, target)
  std::string dict_;                 ///< the images' dictionary
  std::vector<std::vector<ClosureMember>> sets_; ///< the member sets roots share
  std::vector<JobRecord> cpus_;                  ///< the CPUs roots share
  mutable std::once_flag by_closure_once_;
  mutable std::vector<uint32_t> by_closure_; ///< roots_ by (closure key, target)
  mutable std::atomic<bool> gone_{false};
  /// The coarse clock's tick at which the files were last found as stamped.
  mutable std::atomic<int64_t> checked_at_{-1};
  mutable std::mutex header_mu_;
  mutable std::string header_; ///< as read, or as another process stamped it anew since
};

/// Whether `<cache>-images` beside `cache_path` is current: it opens as a
/// load would open it (sound, of this cache file, stamped with the state it
/// and its WAL are in now).
bool published_current(const std::string& cache_path);

/// The published images held across a change of the cache's files that
/// leaves what they hold true (a commit of usage alone, a checkpoint):
/// taken while they are current (under the cache's write lock, where it
/// can be), then renew() stamps them with the state the files are in after
/// the change, so that loads go on reading them. Any other change in
/// between is taken in with it: the window is the time between the change
/// and renew(). Only this user's file is held.
class PublishedHold {
public:
  /// Null if there are none, or they are not current now.
  static std::unique_ptr<PublishedHold> take(const std::string& cache_path);
  ~PublishedHold();
  PublishedHold(const PublishedHold&) = delete;
  PublishedHold& operator=(const PublishedHold&) = delete;
  /// Stamps them with the files' state now, if they are still the file
  /// taken and no one stamped them since. Best effort: a failure leaves
  /// them stale, and loads read the cache file until the next publication.
  void renew();

private:
  PublishedHold() = default;
  std::string cache_path_;
  int fd_ = -1;
  uint64_t dev_ = 0, ino_ = 0;
  std::string header_;
};

/// One load log record's worth: a closure used at `when`, and the counters
/// of the loads that used it (loads and image hits on the first record of a
/// load only).
struct LoadNote {
  Hash128 closure;
  int64_t when = 0;
  int64_t loads = 0, image_hits = 0;
};

/// Appends `notes` to `<cache>-loads` in one write, creating it with
/// `mode`. Best effort, as usage is: false if it could not. `size`, if
/// given, gets the log's size after the write.
bool append_load_log(const std::string& cache_path, mode_t mode,
                     const std::vector<LoadNote>& notes, uint64_t* size = nullptr);

/// A load log this long is taken in by the loading process that made it so
/// (it opens the cache file once): about 20,000 loads' worth.
inline constexpr uint64_t kLoadLogTakeIn = uint64_t(1) << 20;

/// Takes `<cache>-loads` away (renamed, read, removed) and returns its
/// well-formed records; a damaged record is skipped. Empty if there is none.
std::vector<LoadNote> take_load_log(const std::string& cache_path);

} // namespace kiln::storage
