// The C API's handle types, defined once so the C API (kiln.h) and the C++
// API (kiln.hpp) share them, and the registry of the live ones: every handle
// adds itself when it is made and removes itself when it ends, so that an
// entry point given a closed, released or never-made handle can refuse it
// without reading through it (runtime/handle_set.h).
#pragma once

#include "runtime/module.h"
#include "runtime/warm.h"
#include "storage/published/published.h"
#include "storage/storage.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::runtime {

/// The handle types of libkiln whose live handles it keeps.
enum class HandleType : uint8_t { cache, image };

/// Adds a handle just made (its constructor). Throws std::bad_alloc.
void handle_added(HandleType type, const void* handle);
/// Removes `handle`: true if it was live, and the caller now ends it; false
/// if it was not (ended already, or never a handle of this type).
bool handle_taken(HandleType type, const void* handle);
/// Whether `handle` is a live handle of this type. Reads nothing through
/// it, takes no lock: cheap enough for every call.
bool handle_live(HandleType type, const void* handle);

/// What entry point `fn` says of its argument `arg`, a handle of `type`
/// that is not live.
inline std::string not_live_message(const char* fn, const char* arg, HandleType type) {
  return type == HandleType::cache
             ? std::string(fn) + ": " + arg +
                   " is not a live kiln_cache handle (closed, or never opened)"
             : std::string(fn) + ": " + arg +
                   " is not a live kiln_image handle (released, or never loaded)";
}

} // namespace kiln::runtime

struct kiln_cache {
  kiln_cache() { kiln::runtime::handle_added(kiln::runtime::HandleType::cache, this); }
  kiln_cache(const kiln_cache&) = delete;
  kiln_cache& operator=(const kiln_cache&) = delete;

  /// The local cache and the remote ($KILN_REMOTE), if any: consulted on a
  /// local miss of a name, closure or image; linked images are published.
  /// Opened by kiln_cache_open, except where the open found the cache's
  /// published host images and no remote: then at the first call that
  /// needs more than they hold (store()).
  std::unique_ptr<kiln::storage::Storage> storage;
  /// The published host images (storage/published/published.h) the open found, if any:
  /// a host load they hold reads them alone while they are current.
  std::unique_ptr<kiln::storage::PublishedImages> published;
  /// Whether this machine runs each of their CPUs' code (check_host_job),
  /// by the file's CPU index: 0 not yet asked, 1 yes, 2 no. A load asks
  /// once per CPU, not once per load.
  std::unique_ptr<std::atomic<int8_t>[]> published_cpu_ok;
  /// What kiln_cache_open was given, for a later open of `storage`.
  std::string path;
  unsigned flags = 0;
  /// Opens `storage` (kiln_cache_open's: set by libkiln, and called through
  /// this pointer from libkiln-compiler too).
  kiln::Status (*open_storage)(kiln_cache&) = nullptr;
  std::mutex open_mu;
  /// The storage, opened now if it is not yet; its error otherwise.
  kiln::Result<kiln::storage::Storage*> store() {
    std::lock_guard lock(open_mu);
    if (!storage) {
      if (!open_storage)
        return kiln::make_error(kiln::Code::invalid_argument, "the cache handle is closed");
      KILN_TRY(open_storage(*this));
    }
    return storage.get();
  }
  /// The storage if it is open, else null; read under open_mu, since
  /// another thread's load may be opening it.
  kiln::storage::Storage* opened() {
    std::lock_guard lock(open_mu);
    return storage.get();
  }

  /// Loads are counted and closures marked used in memory, and written in
  /// one transaction when the handle closes (or every kFlushEvery loads):
  /// the hot path does no write per load.
  static constexpr size_t kFlushEvery = 256;
  std::mutex usage_mu;
  kiln::storage::Counters usage;
  std::vector<kiln::Hash128> used;

  /// A load of `closure` for the usage counters and its recency; the closure
  /// whose image served it (a library's, a cycle sibling's), when another,
  /// is marked used too, so that gc keeps what its loads read.
  void record_load(const kiln::Hash128& closure, bool linked,
                   const kiln::Hash128* image_of = nullptr);
  void flush_usage();
  /// Usage is advisory: running out of memory while writing it at the
  /// close loses it, and never takes the process down.
  ~kiln_cache() {
    if (registered)
      kiln::runtime::handle_taken(kiln::runtime::HandleType::cache, this);
    try {
      flush_usage();
    } catch (...) {
    }
  }
  /// Cleared by kiln_cache_close, which took the handle out of the registry
  /// itself (so that of two closes of one handle only one deletes it).
  bool registered = true;

  /// The host images it loaded last, loaded again without a read while the
  /// file is unchanged (runtime/warm.h).
  kiln::runtime::WarmImages warm;
};

struct kiln_image {
  kiln_image() { kiln::runtime::handle_added(kiln::runtime::HandleType::image, this); }
  kiln_image(const kiln_image&) = delete;
  kiln_image& operator=(const kiln_image&) = delete;
  ~kiln_image() {
    if (registered)
      kiln::runtime::handle_taken(kiln::runtime::HandleType::image, this);
  }
  /// Cleared by kiln_image_release, which took the handle out itself.
  bool registered = true;

  std::unique_ptr<kiln::runtime::LoadedModule> module;
  kiln::runtime::SymbolMap symbols;
  /// Loaded again from a kept file (runtime/warm.h): the file's table of
  /// where each entry lies from the object's base, and this object's base;
  /// `symbols` is then empty.
  std::shared_ptr<const kiln::runtime::OffsetMap> offsets;
  uintptr_t base = 0;
  /// The address of `entry`, or null if the image has no such function.
  void* find(std::string_view entry) const {
    if (offsets) {
      auto it = offsets->find(entry);
      return it == offsets->end() ? nullptr : reinterpret_cast<void*>(base + it->second);
    }
    auto it = symbols.find(entry);
    return it == symbols.end() ? nullptr : it->second;
  }
  kiln::Hash128 closure;
  std::string target;
};

