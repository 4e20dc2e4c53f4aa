// An NVIDIA image made by the toolkit's ptxas program alone: one PTX module
// that refers to nothing outside itself (a lone job's) assembled as a whole
// program, which is already the executable cubin nvJitLink would otherwise
// link. No nvJitLink is
// loaded for it: loading and setting up nvJitLink costs more than the one
// ptxas process, and a small image is the common case. Free of LLVM, like
// the rest of link/.
#pragma once

#include <kiln/result.hpp>

#include <string>

namespace kiln::link {

/// The ptxas program whole-program images come from: $KILN_PTXAS where it
/// names a program, else $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas or
/// ptxas on $PATH; empty where none is found, or where KILN_PTXAS is empty
/// or "nvjitlink" (every image then comes from nvJitLink). Read once per
/// process.
const std::string& ptxas_program_path();

/// "ptxas V13.0.88": the version the program reports, once per process;
/// unavailable if there is no program or it does not answer.
Result<std::string> ptxas_program_version();

/// What makes a whole-program image, for its image key: the program's
/// version and how the module is assembled ("ptxas V13.0.88 whole program;
/// parts per 16 kernels"). Images by nvJitLink are keyed by
/// nvJitLink's fingerprint instead, so that neither is taken for the other.
Result<std::string> ptxas_program_fingerprint();

/// Assembles `ptx`, one module that defines everything it calls (bar what
/// the driver supplies at load), for `arch` ("sm_90") as a whole program,
/// in `parts` parts (ptxas's --split-compile; the count must follow from
/// the input alone, as nv_assembly_parts does, so that the bytes do). The
/// result is an executable cubin, the same bytes for the same PTX. Errors
/// carry ptxas's log; `what` names the module in them.
Result<std::string> ptxas_whole_program(const std::string& ptx, const std::string& arch,
                                        int parts, const std::string& what);

} // namespace kiln::link
