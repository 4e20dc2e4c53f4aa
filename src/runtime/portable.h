// Portability answers: which closures of a cache or a bundle this machine
// could load, and for the rest which component prevents it (the CPU's
// features, the GPU, the relinking toolchain). Asked of the same backends
// the loader dispatches through; nothing is loaded, linked or written.
#pragma once

#include "core/data_model.h"
#include "storage/records.h"

#include <kiln/result.hpp>

#include <string>
#include <vector>

namespace kiln::runtime {

/// One closure's answer.
struct ClosurePortability {
  Hash128 closure;
  std::string target;
  std::vector<std::string> names; ///< root names pointing at it
  std::string cpu;                ///< the CPU its root job was built for
  bool loadable = false;
  /// What prevents the load: "cpu", "gpu", "linker" or "record" (the root
  /// job is missing); empty when loadable.
  std::string component;
  std::string reason;                    ///< the loader's words for it
  std::vector<std::string> missing;      ///< CPU features this machine lacks
  std::vector<std::string> unknown;      ///< CPU features the loader cannot check
};

/// Every closure's answer, sorted by target then closure key.
struct PortabilityReport {
  size_t loadable = 0;
  std::vector<ClosurePortability> closures;
};

/// The answer for every closure in a cache.
Result<PortabilityReport> check_portable(storage::Records& store);

/// The answer for every closure in a decoded, checked bundle, as if it were
/// imported into a cache that has nothing else.
PortabilityReport check_portable(const core::BundleData& bundle);

/// Reads, decodes and checks the bundle at `path` (signatures as `store`'s
/// settings and the environment require; without a cache, the
/// environment's) and answers for it; nothing is written.
Result<PortabilityReport> check_bundle_portable(storage::Records* store, const std::string& path);

} // namespace kiln::runtime
