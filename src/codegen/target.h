// Targets: what code is produced for. Parsed from a short spec ("host");
// the resolved triple, CPU and features are part of every job key, so code
// for one CPU is never reused for another.
#pragma once

#include "core/target.h"

#include <kiln/result.hpp>

#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
}

namespace kiln::codegen {

// The target types are Kiln's own (core/target.h); codegen resolves them.
using core::CodegenOptions;
using core::TargetDesc;
using core::TargetKind;

/// The accepted spec forms, for error messages.
const char* accepted_target_specs();

/// Parses and resolves a spec. Unknown specs are invalid_argument, naming
/// the accepted forms.
Result<TargetDesc> resolve_target(const std::string& spec);

/// A TargetMachine for a resolved target (position-independent code).
Result<std::unique_ptr<llvm::TargetMachine>> create_target_machine(const TargetDesc& target,
                                                                   const CodegenOptions& options);

/// The data layout string for a target.
Result<std::string> target_data_layout(const TargetDesc& target);

/// The toolchain part of every job key: Kiln's artifact format version and
/// the LLVM version that produced the code.
std::string toolchain_fingerprint(const TargetDesc& target);

} // namespace kiln::codegen
