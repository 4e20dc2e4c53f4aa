// What the loader holds of a loaded image, whatever the device: the module
// (a dlopen handle, a CUmodule, a hipModule_t) and its symbol table.
#pragma once

#include <cstdint>
#include <functional>
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

} // namespace kiln::runtime
