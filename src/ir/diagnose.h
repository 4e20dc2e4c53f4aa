// The mistakes a new user makes first, diagnosed with what to do instead: a
// source file, PTX or a binary given where LLVM IR is expected; an entry
// named by its source name when the IR holds the mangled one; IR built for
// one target precompiled for another. Also the target a unit was built
// for, so GPU IR given without a target is compiled for its own GPU.
#pragma once

#include "core/target.h"

#include <kiln/result.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace kiln::ir {

/// Refuses, before parsing, an input that is not LLVM IR: CUDA, HIP, C or
/// C++ source (by extension or by content), PTX text, an ELF object (host,
/// cubin, AMD code object), an NVIDIA fatbin or a clang offload bundle. The
/// error (invalid_argument, at `name`) names what the input is and the
/// clang-22 command that makes IR of it. Text that reads as IR, bitcode and
/// anything unrecognised pass, for the parser to judge.
Status check_input_kind(const std::string& name, std::string_view bytes);

/// For an entry the unit does not define: the defined functions (mangled
/// names, usable as entries) whose demangled base or qualified name equals
/// `wanted`, matches it ignoring case, or is within edit distance 2 of it,
/// best first, at most 5.
std::vector<std::string> entry_suggestions(const llvm::Module& unit, const std::string& wanted);

/// The whole message for an entry the unit does not define: "entry 'X' is
/// not a function defined in the unit", why (only declared, a variable), and
/// "did you mean M (signature)?" from entry_suggestions, or the functions it
/// does define.
std::string describe_missing_entry(const llvm::Module& unit, const std::string& wanted);

/// The Kiln target spec the unit was built for: "sm_90" from an nvptx64
/// unit's target-cpu, "gfx942:sramecc+:xnack-" from an amdgcn unit's
/// target-cpu and target-features, "" for a target-neutral unit (no triple)
/// or a CPU triple (the host). Errors (invalid_argument): GPU IR whose
/// functions name no target-cpu, or name different ones. `source` (the
/// inputs, for messages) may be empty.
Result<std::string> target_of_unit(const llvm::Module& unit, const std::string& source = "");

/// Whether the unit may be compiled for `target`. A target-neutral unit (no
/// triple, or an unknown architecture) may be compiled for every target. A
/// unit with a triple was lowered by its front end for that architecture
/// (data layout, calling convention, intrinsics, address spaces), so it is
/// refused (invalid_argument) for a target of another kind or architecture,
/// or another OS, with the command that builds the IR for `target`.
/// Returns warnings for IR specialised for another GPU of the same kind
/// (its functions' target-cpu, xnack/sramecc) or another wavefront size.
Result<std::vector<std::string>> check_unit_for_target(const llvm::Module& unit,
                                                       const core::TargetDesc& target,
                                                       const std::string& source = "");

} // namespace kiln::ir
