// The C API's handle types, defined once so the C API (kiln.h) and the C++
// API (kiln.hpp) share them.
#pragma once

#include "runtime/module.h"
#include "runtime/warm.h"
#include "storage/storage.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct kiln_cache {
  /// The local cache and the remote ($KILN_REMOTE), if any: consulted on a
  /// local miss of a name, closure or image; linked images are published.
  std::unique_ptr<kiln::storage::Storage> storage;

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
  ~kiln_cache() { flush_usage(); }

  /// The host images it loaded last, loaded again without a read while the
  /// file is unchanged (runtime/warm.h).
  kiln::runtime::WarmImages warm;
};

struct kiln_image {
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

