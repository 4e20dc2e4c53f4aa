// The CUDA toolkit's PTX assembler, run as a program: PTX → relocatable
// cubin (-c), so nvJitLink can later link a closure's pieces without
// compiling anything.
#pragma once

#include <kiln/result.hpp>

#include <string>

namespace kiln::codegen {

/// $KILN_PTXAS, else $CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas,
/// else ptxas on $PATH; empty if none is present.
const std::string& ptxas_path();

/// "ptxas V13.0.88" or empty when there is no ptxas: part of the toolchain
/// fingerprint of every NVIDIA job (the cubin depends on it).
const std::string& ptxas_version();

/// Assembles PTX into a relocatable cubin for `arch` ("sm_90a").
Result<std::string> assemble_ptx(const std::string& ptx, const std::string& arch,
                                 const std::string& what);

} // namespace kiln::codegen
