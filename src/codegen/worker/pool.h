// Compiling a job in a worker process, so that no input can end the calling
// process. LLVM's backend ends the process on some inputs (report_fatal_error,
// "Cannot select", a crash in a pass); in a JIT front end or Python that is
// the user's whole session. compile_job_isolated hands the job to a
// persistent worker (the kiln-codegen-worker executable, which runs
// compile_job) and turns a worker's death into an Error naming the job.
//
// Environment:
//   KILN_CODEGEN_ISOLATION=0  compile in this process (compile_job), for
//                             debugging and fuzzing; also "off", "false", "no".
//   KILN_CODEGEN_ISOLATION=bitcode  compile and link in this process, but
//                             read front-end bitcode in a worker first
//                             (check_bitcode_isolated): kiln-precompile's
//                             default, since its process is its own.
//   KILN_CODEGEN_WORKER=PATH  the worker executable to run; by default it is
//                             looked for relative to libkiln-compiler (the
//                             install's libexec/kiln/, the build tree's bin/,
//                             the library's own directory).
#pragma once

#include "codegen/compile.h"
#include "link/nvjitlink.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

/// compile_job's contract, run in a worker process: the same artifacts,
/// byte for byte, and the same errors. A worker that dies during the job
/// (a signal, an abort, an exit) fails the job with Code::internal, naming
/// the entry and target and carrying the end of what the worker printed
/// ("LLVM ERROR: Cannot select: ..."); the dead worker is replaced for later
/// jobs. No worker executable, or one that does not start, is
/// Code::unavailable naming where it was looked for: never a silent
/// fallback into this process.
///
/// Thread-safe. Workers come from one process-wide pool: started lazily
/// (posix_spawn, never fork without exec), reused across calls, one job at
/// a time each, so there are never more workers than concurrent callers.
/// Workers end when this process ends or closes their socket.
/// LLVM's warnings for the job are appended to `*warnings` where given.
Result<std::vector<CompiledArtifact>> compile_job_isolated(const JobInput& job,
                                                           const TargetDesc& target,
                                                           const CodegenOptions& options,
                                                           std::vector<std::string>* warnings =
                                                               nullptr);

/// Reads a front end's bitcode (`bytes`, from the input `name`) with LLVM's
/// bitcode reader in a worker, as ir::ingest will read it in this process.
/// LLVM's reader trusts the stream and crashes on some hostile bitcode; a
/// crash here is an invalid_argument error naming the input, and this
/// process never reads bytes that crashed it. The reader's own errors are
/// not reported here (ingest reports them, with their position). Ok, doing
/// nothing, when isolation is off (bitcode_isolation_enabled);
/// Code::unavailable when no worker starts.
Status check_bitcode_isolated(const std::string& name, const std::string& bytes);

/// link::nvjitlink_cubin, run in a worker: nvJitLink crashing on an input
/// ends the worker and is this link's internal error, and its buffers (a
/// megabyte and more per image) come and go in the worker's heap, whose
/// malloc keeps them, not in the caller's. In this process when isolation
/// is off.
Result<std::string> nvlink_isolated(const std::vector<link::NvInput>& inputs,
                                    const std::string& arch, bool device_runtime);

/// Whether compile_job_isolated and nvlink_isolated use workers
/// (KILN_CODEGEN_ISOLATION is not "0", "off", "false", "no" or "bitcode").
/// Read at each call.
bool codegen_isolation_enabled();

/// Whether check_bitcode_isolated reads bitcode in a worker
/// (KILN_CODEGEN_ISOLATION is not "0", "off", "false" or "no").
bool bitcode_isolation_enabled();

/// The worker executable compile_job_isolated would start:
/// $KILN_CODEGEN_WORKER, else the first found relative to libkiln-compiler.
/// Code::unavailable names every place it looked.
Result<std::string> codegen_worker_path();

/// Starts workers ahead of the jobs, in the background, until `n` are idle
/// or starting (none when isolation is off): a caller that will compile calls
/// it before planning, so that a worker's start (mostly loading LLVM, tens of
/// milliseconds) overlaps the plan. A job takes a started worker once it has
/// said hello; one that failed to start is replaced then.
void prestart_workers(unsigned n);

/// The pool's state, for tests and diagnostics (workers started ahead count
/// as idle).
struct WorkerPoolStats {
  std::vector<int> idle_pids; ///< workers waiting for a job
  std::vector<int> busy_pids; ///< workers compiling a job
  uint64_t started = 0;       ///< workers started by this process
  uint64_t lost = 0;          ///< workers that died or were ended during a job
  uint64_t links_declined = 0; ///< NVIDIA links a worker declined, made here instead
};
WorkerPoolStats worker_pool_stats();

/// Ends the idle workers (closing their sockets; each exits at end of file)
/// and waits for them, giving their memory back. Busy workers are left to
/// finish their jobs. Later jobs start new workers.
void stop_idle_workers();

} // namespace kiln::codegen
