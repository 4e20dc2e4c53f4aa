// A handle's warm images: the host images it loaded last, kept in their
// sealed memory files with what was read to load them (the closure, the
// image that served it), so that loading one again reads nothing from the
// cache and writes nothing to memory: one dlopen.
//
// Kept only while the cache file is as it was: the set is tagged with the
// connection's DataStamp (storage/records.h) taken before the reads
// that filled it, and a load whose stamp differs empties it (another
// connection's commit, one of the handle's own writes, a reconnection).
// An image whose CPU check passed once passes again in this process.
//
// Only sealed files are kept: bytes nothing can change. Bounded: at most
// kMaxImages files (one descriptor each) and kMaxBytes of memory, the least
// recently loaded going first; all closed with the handle.
//
// A reader that cannot write the WAL's -shm file (another user's cache,
// read through its side files) sees data_version move at every read: its
// set is emptied at each load and serves nothing, which is slower, never
// wrong.
#pragma once

#include "core/data_model.h"
#include "runtime/module.h"
#include "storage/records.h"

#include "support/hash.h"

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace kiln::runtime {

/// What a load of a root read and made, kept for its next load.
struct WarmImage {
  std::string target;                 ///< the spec it was loaded for
  core::ClosureRecord closure;        ///< with its members' entries
  std::optional<Hash128> served_by;   ///< the closure whose image it is, when another
  std::shared_ptr<const KeptImage> file; ///< the backend's (the host's sealed memory file)
};

class WarmImages {
public:
  static constexpr size_t kMaxImages = 8;
  static constexpr size_t kMaxBytes = size_t(64) << 20;

  /// The image kept for (`name`, `target` as the caller gave it), if the
  /// set is still tagged `now`; a set tagged otherwise is emptied and
  /// tagged `now`.
  std::shared_ptr<const WarmImage> find(const std::string& name, const std::string& target,
                                        const storage::DataStamp& now);
  /// Keeps `image` for (`name`, `target`), read under stamp `read_at`
  /// (taken before its reads): dropped if the set has moved on since.
  void keep(const std::string& name, const std::string& target,
            const storage::DataStamp& read_at, std::shared_ptr<const WarmImage> image);

  /// Counts a load served from the set.
  void served();
  /// Loads served from the set, for tests and figures.
  size_t hits() const;
  size_t size() const;

private:
  struct Entry {
    std::string name, target;
    std::shared_ptr<const WarmImage> image;
  };
  mutable std::mutex mu_;
  storage::DataStamp stamp_;
  std::list<Entry> entries_; ///< most recently loaded first
  size_t bytes_ = 0;
  size_t hits_ = 0;
};

} // namespace kiln::runtime
