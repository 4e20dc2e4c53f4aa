// The CUDA toolkit's PTX assembler: PTX → relocatable cubin (-c), so
// nvJitLink can later link a closure's pieces without compiling anything.
// Where the build found the toolkit's PTX compiler library
// (libnvptxcompiler_static), PTX is assembled in this process; else the
// ptxas program runs once per job. KILN_PTXAS=nvjitlink (the default where
// no program is found) defers assembly to the image link instead: nvJitLink
// (already loaded to link images) assembles a closure's PTX in process, in
// the same call that links it, with no process per job, and makes every
// image with nvJitLink (otherwise a lone job's image comes from the ptxas
// program as a whole program: link/ptxas_program.h).
#pragma once

#include <kiln/result.hpp>

#include <string>

namespace kiln::codegen {

/// What assembles cubins.
enum class PtxAssembler {
  none,    ///< nothing: NVIDIA jobs store PTX only
  program, ///< the ptxas program at ptxas_path(), run once per job
  library, ///< the PTX compiler library linked into this process
  link,    ///< deferred: jobs store PTX; nvJitLink assembles it at the image link
};

/// The KILN_PTXAS value that selects PtxAssembler::link.
inline constexpr const char* kAssembleAtLink = "nvjitlink";

/// KILN_PTXAS set and empty: none; "nvjitlink": link; set: the program it
/// names; unset: the library where it was linked at build time, else the
/// program ptxas_path() finds, else link where nvJitLink loads, else none.
PtxAssembler ptx_assembler();

/// Whether ptx_assembler() has run in this process: until it has, nothing
/// of NVIDIA's toolchain is resolved (nor nvJitLink loaded).
bool ptx_assembler_resolved();

/// Whether the PTX compiler library was linked at build time.
bool ptx_compiler_linked();

/// $KILN_PTXAS (unless it is "nvjitlink"), else $CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas,
/// else ptxas on $PATH; empty if none is present. The program, whichever
/// assembler ptx_assembler() names.
const std::string& ptxas_path();

/// What assembles cubins and its version, empty when nothing does: part of
/// the toolchain fingerprint of every NVIDIA job (the cubin depends on it).
/// "ptxas V13.0.88" for the program; for the library, "ptxas V13.0 in
/// process (libnvptxcompiler_static 0123456789abcdef)": its version and a
/// hash of the library the build linked; for link, "nvJitLink 13.0 at the
/// image link" (the PTX ISA a job may use is capped by what reads it).
const std::string& ptxas_version();

/// Assembles PTX into a relocatable cubin for `arch` ("sm_90a") with
/// ptx_assembler() (program or library; link and none assemble nothing here), at ptxas's default optimization level (-O3). Errors
/// start with `what` and carry the assembler's log.
Result<std::string> assemble_ptx(const std::string& ptx, const std::string& arch,
                                 const std::string& what);

} // namespace kiln::codegen
