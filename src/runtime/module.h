// What the loader holds of a loaded image, whatever the device: the module
// (a dlopen handle, a CUmodule, a hipModule_t) and its symbol table.
#pragma once

#include "core/data_model.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kiln::runtime {

/// Hashes std::string and std::string_view alike, so a lookup by view
/// builds no string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// A loaded image's symbol table: entry name → address.
using SymbolMap = std::unordered_map<std::string, void*, StringHash, std::equal_to<>>;
/// Where each entry lies from a loaded object's base: one table for every
/// object loaded from the same kept file (runtime/warm.h).
using OffsetMap = std::unordered_map<std::string, uintptr_t, StringHash, std::equal_to<>>;

/// What the loader needs of a loaded module, whatever the device.
class LoadedModule {
public:
  virtual ~LoadedModule() = default;
  /// dlopen handle, CUmodule or hipModule_t.
  virtual void* handle() const = 0;
};

/// What a backend's load leaves behind to load the same image again with
/// nothing read and nothing written (the host's sealed memory file): the
/// handle's warm images hold these (runtime/warm.h).
class KeptImage {
public:
  virtual ~KeptImage() = default;
  virtual size_t size() const = 0;
  /// Whether its bytes can no longer change: only a sealed image is kept.
  virtual bool sealed() const = 0;
  /// Loads the image as a new module and fills `symbols` by entry name (or,
  /// given `shared` and `base`, hands out one table of where each entry lies
  /// from the module's base); null, and nothing loaded, when the module
  /// would not be a new one (see HostImageFile::load).
  virtual Result<std::unique_ptr<LoadedModule>> load(const core::ClosureRecord& closure,
                                                     SymbolMap& symbols,
                                                     std::shared_ptr<const OffsetMap>* shared,
                                                     uintptr_t* base) const = 0;
};

} // namespace kiln::runtime
