// The loader: name or key → closure → image (cached, or relinked from the
// closure's job artifacts and stored) → loaded → function addresses by the
// jobs' original entry names. Free of LLVM; the linker is dlopen'd lazily.
#pragma once

#include "cache/store.h"

#include <kiln/result.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kiln::runtime {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// A loaded image's symbol table: entry name → address.
using SymbolMap = std::unordered_map<std::string, void*, StringHash, std::equal_to<>>;

/// What the loader needs of a loaded module, whatever the device.
class LoadedModule {
public:
  virtual ~LoadedModule() = default;
};

/// Host images: validated, then loaded from memory (memfd) with dlopen.
Result<std::unique_ptr<LoadedModule>> load_host_image(const std::string& bytes,
                                                      const cache::ClosureRecord& closure,
                                                      SymbolMap& symbols);

/// Links a closure's host objects through the lazily loaded linker library.
Result<std::string> link_host_image(const std::vector<std::string>& objects,
                                    const std::vector<std::string>& names);
/// The fingerprint of the linker the loader would use, without loading it.
const char* host_linker_fingerprint();

/// The image "architecture" of the host: the image key's arch column.
const char* host_arch();

} // namespace kiln::runtime

/// The C handle types, defined here so the C++ API and the C API share them.
struct kiln_cache {
  std::unique_ptr<kiln::cache::Store> store;
};

struct kiln_image {
  std::unique_ptr<kiln::runtime::LoadedModule> module;
  kiln::runtime::SymbolMap symbols;
  kiln::Hash128 closure;
  std::string target;
};

namespace kiln::runtime {
/// The whole load: resolve, fetch or relink, load.
Result<std::unique_ptr<kiln_image>> load_image(kiln_cache& cache, std::string_view name,
                                               std::string_view target);
} // namespace kiln::runtime
