// Device math libraries, linked at IR level into the jobs that call them:
// libdevice (CUDA toolkit) for NVPTX, the ROCm device libraries (ocml,
// ockl) for AMDGPU. Which library a job uses, and its version, is part of
// that job's key; jobs that use none are unaffected by either.
#pragma once

#include "codegen/llvm_target.h"

#include <kiln/result.hpp>

#include <string>
#include <vector>

namespace llvm {
class Module;
}

namespace kiln::codegen {

/// The toolchain-fingerprint part for a job calling `callees` (its declared,
/// undefined functions) on `target`: "" if it needs no device library, else
/// e.g. "; libdevice 5f3a...". A needed library that is not installed is
/// `unavailable`, naming where it was looked for.
Result<std::string> device_libs_fingerprint(const TargetDesc& target,
                                            const std::vector<std::string>& callees);

/// Checks that every function a GPU job calls but its unit does not define
/// (`callees`) is one the toolchain provides: a device library's (libdevice
/// __nv_*, ROCm __ocml_/__ockl_/__oclc_*, hip.bc's fence), the CUDA device
/// runtime's (cuda*, __cuda*: linked from libcudadevrt), or one the driver
/// supplies at load (core::supplied_at_load). Anything else can never link:
/// invalid_argument naming the function and the entry. Host jobs may call
/// anything (the process defines it).
Status check_callees(const TargetDesc& target, const std::string& entry,
                     const std::vector<std::string>& callees);

/// The files this target's code generation depends on beyond LLVM: the
/// ptxas program (where it is what assembles, ptx_assembler()) and libdevice
/// for NVIDIA, the ROCm device libraries for AMD (those that are installed).
/// Read by nobody: their identities validate request memos.
std::vector<std::string> toolchain_files(const TargetDesc& target);

/// How link_device_libs reads a library: `lazy` materializes only the
/// functions the linker takes from it; `eager` parses all of it first. Both
/// give the same module (eager is the reference the tests hold lazy to).
enum class LibraryLoading { lazy, eager };

/// Links the device library the module needs (only the functions it calls)
/// and, for AMDGPU, defines the oclc control constants for the target. The
/// library's bytes are read from disk once per process.
Status link_device_libs(llvm::Module& m, const TargetDesc& target,
                        LibraryLoading loading = LibraryLoading::lazy);

} // namespace kiln::codegen
