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
  kiln::Hash128 closure;
  std::string target;
};

