// Links a closure's NVIDIA pieces (relocatable cubins, or PTX) into one
// cubin with nvJitLink, dlopen'd: no GPU, no driver, no link-time CUDA
// dependency. Free of LLVM, so the loader can relink GPU images itself.
#pragma once

#include <kiln/result.hpp>

#include <string>
#include <vector>

namespace kiln::link {

struct NvInput {
  std::string name;  ///< for the error log: the job key
  std::string bytes;
  bool ptx = false;  ///< PTX text rather than a relocatable cubin
};

/// Whether the toolkit's CUDA device runtime (libcudadevrt.a: dynamic
/// parallelism, device-side graph launches) is installed: read once per
/// process from $KILN_CUDADEVRT, $CUDA_HOME/lib64, /usr/local/cuda/lib64 or
/// /usr/lib/x86_64-linux-gnu; unavailable, saying where it looked, if not.
Status cuda_device_runtime();

/// "libcudadevrt <hash of its bytes>", or "no libcudadevrt": part of every
/// NVIDIA image key, since the images that need it embed its code.
std::string cuda_device_runtime_fingerprint();

/// The libcudadevrt.a file cuda_device_runtime reads, as found once per
/// process; empty if none is installed.
std::string cuda_device_runtime_path();

/// "nvJitLink 13.0", or unavailable if the library cannot be loaded.
Result<std::string> nvjitlink_fingerprint();

/// The nvJitLink library this process loaded, as the dynamic linker found
/// it; empty if none could be loaded. Read once per process: later changes
/// to $KILN_NVJITLINK or $CUDA_HOME do not move it.
std::string nvjitlink_path();

/// What links an NVIDIA image in this process, in one string: nvJitLink's
/// version and file (its absolute path, size, modification time and inode,
/// so that a library patched in place differs), or why there is none, and
/// the device runtime's fingerprint (a hash of its bytes). A process that links on another's behalf (a code
/// generation worker) links only when its identity is the same, so that an
/// image is made by exactly the tools its key names.
std::string nvlink_identity();

/// How many parts ptxas splits the assembly of `inputs` into
/// (`--split-compile`, each part on a thread of its own): one per 16 kernels
/// (`.entry` definitions) of their PTX, at most 8. ptxas's output depends on
/// that count, so it follows from the inputs and never from a thread count:
/// the same inputs give the same cubin at any -j, on any machine. Releases of
/// nvJitLink before 13 (whose ptxas may lack the option) assemble in one
/// part whatever this says.
int nv_assembly_parts(const std::vector<NvInput>& inputs);

/// Starts nvJitLink's first link, of an empty module for `arch` in PTX ISA
/// `ptx_isa` (78 for 7.8), on a thread of its own, once per process, so
/// that the set-up a process's first link pays overlaps the caller's work
/// (a job's code generation); nvjitlink_cubin waits for it to end. Does
/// nothing without nvJitLink, nor where a ptxas program is found
/// (ptxas_program_path): images that need no link, the usual ones, are then
/// made without nvJitLink. Thread-safe.
void nvjitlink_warm_up(const std::string& arch, int ptx_isa);

/// Links the inputs for `arch` ("sm_90"), and the CUDA device runtime as a
/// library (only its members the inputs call) with `device_runtime` where it
/// is installed; nvJitLink's error log is in the error message. With
/// `merge`, several PTX inputs are assembled as one module where that is the
/// same program (merge_ptx, link/ptx_merge.h), else one by one. PTX is
/// assembled in nv_assembly_parts(inputs) parts.
Result<std::string> nvjitlink_cubin(const std::vector<NvInput>& inputs, const std::string& arch,
                                    bool device_runtime = false, bool merge = true);

} // namespace kiln::link
