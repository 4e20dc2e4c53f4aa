// The C API's handle types, defined once so the C API (kiln.h) and the C++
// API (kiln.hpp) share them.
#pragma once

#include "runtime/module.h"
#include "storage/local/store.h"
#include "storage/remote/tier.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct kiln_cache {
  std::unique_ptr<kiln::storage::Store> store;
  /// The shared tier ($KILN_REMOTE), or null: consulted on a local miss of a
  /// name, closure or image; linked images are published to it.
  std::unique_ptr<kiln::storage::remote::Tier> remote;

  /// Loads are counted and closures marked used in memory, and written in
  /// one transaction when the handle closes (or every kFlushEvery loads):
  /// the hot path does no write per load.
  static constexpr size_t kFlushEvery = 256;
  std::mutex usage_mu;
  kiln::storage::Counters usage;
  std::vector<kiln::Hash128> used;

  void record_load(const kiln::Hash128& closure, bool linked);
  void flush_usage();
  ~kiln_cache() { flush_usage(); }
};

struct kiln_image {
  std::unique_ptr<kiln::runtime::LoadedModule> module;
  kiln::runtime::SymbolMap symbols;
  kiln::Hash128 closure;
  std::string target;
};

