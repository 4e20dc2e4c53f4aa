// Job modules: extract an entry and everything it calls or references
// directly from the unit into a canonical module, lowering each
// kiln_deferred(@f) to a symbolic reference to f's own job.
#pragma once

#include <kiln/result.hpp>

#include <functional>
#include <string>
#include <vector>

namespace llvm {
class Function;
class Module;
}

namespace kiln::ir {

struct ExtractConfig {
  std::string triple;
  std::string data_layout;
  bool debug = false; ///< keep debug info and locations
  /// The deferred symbol for a child entry (derived from its identity).
  std::function<std::string(const std::string& entry)> deferred_symbol;
};

struct DeferredRef {
  std::string symbol;
  std::string entry;
  bool operator<(const DeferredRef& o) const { return symbol < o.symbol; }
  bool operator==(const DeferredRef& o) const = default;
};

struct ExtractedJob {
  std::string bitcode;           ///< the canonical module: its bytes define the job
  std::vector<DeferredRef> refs; ///< sorted by symbol, unique
  /// Functions the job calls but the unit does not define (device math
  /// libraries, the C library), sorted; deferred symbols excluded.
  std::vector<std::string> callees;
  /// The newest PTX ISA the job's functions ask for in their
  /// "target-features" (+ptxNN, as clang writes it), times ten: 88 for
  /// PTX 8.8; 0 if none does.
  int ptx_isa = 0;
  /// Built by cloning the whole unit (O(unit)): extract_job falls back to it
  /// for what its own cloning does not model. The bytes are the same either
  /// way; tests and the benchmarks read this to see which path ran.
  bool by_unit_clone = false;
};

/// True if `f` is a kernel: the ptx_kernel or amdgpu_kernel convention (of
/// any GPU target), or the "kiln-kernel" attribute of target-neutral units.
bool is_kernel(const llvm::Function& f);

/// Extracts the job module for `entry`. Errors: the entry is not a function
/// defined in the unit; kiln_deferred applied to anything but such a
/// function, or used other than as a direct call (naming the call site).
/// Costs O(size of the job), not O(size of the unit): a unit of many roots
/// plans in linear time.
Result<ExtractedJob> extract_job(const llvm::Module& unit, const std::string& entry,
                                 const ExtractConfig& config);

/// The same job built by cloning the whole unit and erasing what the entry
/// does not reach: O(unit) per job. extract_job falls back to it for what
/// its own cloning does not model, and must match it byte for byte (the
/// benchmark harness checks that on every fixture and workload).
Result<ExtractedJob> extract_job_by_unit_clone(const llvm::Module& unit, const std::string& entry,
                                               const ExtractConfig& config);

} // namespace kiln::ir
