// Compiling one job: parse its canonical module into a private context,
// apply the finishing steps every job gets (whatever its depth), optimize
// and emit code. Safe to run for many jobs on many threads at once.
#pragma once

#include "codegen/llvm_target.h"

#include <kiln/result.hpp>

#include <string>
#include <utility>
#include <vector>

namespace kiln::codegen {

struct JobInput {
  std::string entry;   ///< original entry name in the module
  std::string symbol;  ///< the deferred symbol the job defines for its entry
  std::string bitcode; ///< canonical module
  /// Placeholder names of deferred children in the module → their deferred
  /// symbols for this target and options.
  std::vector<std::pair<std::string, std::string>> renames;
};

struct CompiledArtifact {
  std::string format; ///< "obj"
  std::string bytes;
};

/// Finishes, optimizes and emits a job. Errors name the entry and target.
/// LLVM's warnings for the job (a loop not unrolled as asked, ...) are
/// appended to `*warnings` where given.
Result<std::vector<CompiledArtifact>> compile_job(const JobInput& job, const TargetDesc& target,
                                                  const CodegenOptions& options,
                                                  std::vector<std::string>* warnings = nullptr);

/// The artifact formats a job for `target` stores (what a cache hit needs).
std::vector<std::string> artifact_formats(const TargetDesc& target);

} // namespace kiln::codegen
