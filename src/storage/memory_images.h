// The images a read-only connection linked, kept in memory for its life
// (it cannot store them): by closure, architecture and linker, the newest
// put winning. The cache file's store and the tests' in-memory records
// both keep theirs here. Not thread-safe: its owner holds its lock.
#pragma once

#include "core/data_model.h"
#include "support/hash.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace kiln::storage {

class MemoryImages {
public:
  void put(const core::ImageKey& key, const std::string& bytes) {
    images_[{key.closure, key.arch, key.linker}] = {++seq_, bytes};
  }
  /// The newest image of `closure` for `arch`, by `linker` if one is given.
  std::optional<std::string> newest(const Hash128& closure, const std::string& arch,
                                    const std::string* linker) const {
    const std::pair<uint64_t, std::string>* best = nullptr;
    for (const auto& [k, v] : images_)
      if (std::get<0>(k) == closure && std::get<1>(k) == arch &&
          (!linker || std::get<2>(k) == *linker) && (!best || v.first > best->first))
        best = &v;
    if (!best)
      return std::nullopt;
    return best->second;
  }

private:
  /// (closure, arch, linker) → (the order it was put in, its bytes).
  std::map<std::tuple<Hash128, std::string, std::string>, std::pair<uint64_t, std::string>>
      images_;
  uint64_t seq_ = 0;
};

} // namespace kiln::storage
