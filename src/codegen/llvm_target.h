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

/// The PTX ISA (times ten) an NVIDIA target's code is written in, from its
/// features ("+ptx78" → 78).
int ptx_isa_of(const TargetDesc& target);

/// The newest PTX ISA this toolchain can compile and assemble: the newest
/// LLVM's NVPTX backend writes, capped by what the installed ptxas reads.
int newest_ptx_isa();

/// An NVIDIA job's own target: the newer of the architecture's minimum PTX
/// ISA and the one its IR asks for (`ir_isa`, from ExtractedJob::ptx_isa).
/// An ISA newer than newest_ptx_isa() is an input error naming the entry,
/// the ISA it needs and the one available. Other targets are returned as
/// they are.
Result<TargetDesc> job_target(const TargetDesc& target, int ir_isa, const std::string& entry);

/// A TargetMachine for a resolved target (position-independent code).
Result<std::unique_ptr<llvm::TargetMachine>> create_target_machine(const TargetDesc& target,
                                                                   const CodegenOptions& options);

/// The data layout string for a target.
Result<std::string> target_data_layout(const TargetDesc& target);

/// The toolchain part of every job key: Kiln's artifact format version and
/// the LLVM version that produced the code.
std::string toolchain_fingerprint(const TargetDesc& target);

} // namespace kiln::codegen
