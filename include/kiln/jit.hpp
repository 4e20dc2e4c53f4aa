// Kiln embedded in a front end (libkiln-compiler): compile IR held in memory
// into the cache behind a kiln::Cache, and compile-or-load, the one call a
// JIT makes: "this kernel for this device, from the cache if it is there,
// compiled and stored if not". The C form is kiln_compiler.h.
//
// Thread safety: any number of threads may call these through one Cache at
// once; each compile has its own LLVM context and cache connection.
#pragma once

#include <kiln/compiler.hpp>
#include <kiln/kiln.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// One in-memory input: bitcode or textual IR, and the name messages use.
/// Views only: the bytes are copied by the call that takes them.
struct Source {
  std::string_view name;
  std::string_view bytes;
};

/// Codegen options of compile_or_load.
struct JitOptions {
  int opt_level = 2;  ///< 0..3
  bool debug = false; ///< keep debug info
  unsigned jobs = 0;  ///< parallel compiles; 0: hardware threads
  bool must_hit = must_hit_from_environment(); ///< a miss fails (see CompileRequest)
  std::string remote;            ///< the shared tier (see CompileRequest); empty: $KILN_REMOTE
  bool remote_read_only = false; ///< fetch from the tier, never publish
};

/// A failure with its context, taken apart: the input and line, the entry,
/// target and job it is about (empty / 0 where it concerns none).
struct ErrorInfo {
  Code code = Code::internal;
  std::string message;
  std::string source; ///< the input: a Source's name or a file path
  unsigned line = 0;  ///< 1-based, in `source`
  unsigned column = 0;
  std::string entry;
  std::string target;
  std::string job; ///< the job's key, 32 hex
};

/// The fields of an error of this API (Error carries them from where it arose).
ErrorInfo error_info(const Error& error);

/// Compiles what the cache behind `cache` lacks (see Plan::run), records
/// the roots' closures and links their images, through the handle's own
/// connection: compile(request, cache_path) (compiler.hpp) for an open
/// cache, the request first as there. Input errors change nothing.
Result<CompileReport> compile(const CompileRequest& request, const Cache& cache);

/// A loaded image and how it was obtained.
struct Loaded {
  Image image;
  CompileReport report; ///< every job; all `cached` on a hit
  bool hit = false;     ///< the closure was stored already: nothing compiled
};

/// The image of root `entry` for `target` (empty: the present device, see
/// present_target), from the cache if its closure is stored, else compiled,
/// stored, linked and loaded. The unit is parsed and keyed either way; a hit
/// compiles and writes nothing. A job that fails to compile is an error with
/// the compiler's message.
Result<Loaded> compile_or_load(const Cache& cache, std::span<const Source> sources,
                               std::string_view entry, std::string_view target = {},
                               const JitOptions& options = {});

/// The target spec of the present device: an NVIDIA GPU's "sm_XY" when the
/// CUDA driver sees one, else an AMD GPU's "gfxNNN[:...]" when HIP sees one,
/// else "host".
std::string present_target();


} // namespace kiln
