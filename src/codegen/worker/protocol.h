// The messages between compile_job_isolated (codegen/worker/pool.cpp) and the
// code generation worker (codegen/worker/main.cpp), over a local socket:
// each message is an 8-byte little-endian length and a cereal payload. The
// worker says hello once it has started, then answers one request (a job,
// its target and options) with one response (artifacts or an Error) at a
// time, and exits when its socket reaches end of file.
#pragma once

#include "codegen/compile.h"
#include "link/nvjitlink.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::codegen::worker {

/// The worker executable's file name.
inline constexpr const char* kExecutableName = "kiln-codegen-worker";

/// A message longer than this is a protocol error (the framing is corrupt).
inline constexpr uint64_t kMaxMessage = uint64_t(4) << 30;

/// The worker's first message: the protocol version and the LLVM it was
/// built with.
std::string encode_hello();

/// Checks a hello against this build: a worker of another build or LLVM
/// would give other code than compile_job here. `worker` names it.
Status check_hello(const std::string& message, const std::string& worker);

/// The toolchain the parent resolved (the environment variables that name
/// the assembler and device libraries, and their values), which the worker
/// takes as its own before its first job: a job is compiled with exactly the
/// tools its key names. It travels with the requests rather than in the
/// worker's environment, so that a worker starts before the parent has
/// resolved it (which loads nvJitLink).
using Toolchain = std::vector<std::pair<std::string, std::string>>;

/// Whether `next` is `base`, or `base` with NVIDIA's settings (KILN_PTXAS,
/// KILN_LIBDEVICE, KILN_NVJITLINK, KILN_CUDADEVRT) added to a `base` that has
/// none of them: a worker given `base` takes `next`'s additions. The parent
/// adds NVIDIA's settings, all at once, when it has resolved them, and no
/// NVIDIA request reaches a worker before that, so a worker has not read
/// those before it is told them. Any other difference replaces the worker.
bool toolchain_extends(const Toolchain& base, const Toolchain& next);

std::string encode_request(const JobInput& job, const TargetDesc& target,
                           const CodegenOptions& options, const Toolchain& toolchain);

/// A request that only reads a front end's bitcode (`name`, for messages)
/// with LLVM's bitcode reader, the way ir::ingest will: a reader crash on
/// hostile bitcode then ends the worker, not the caller
/// (check_bitcode_isolated).
std::string encode_read_request(const std::string& name, const std::string& bitcode,
                                const Toolchain& toolchain);

/// A request that links an NVIDIA image with nvJitLink
/// (link::nvjitlink_cubin's arguments): its bytes come back as one artifact,
/// "cubin" (nvlink_isolated). It carries this process's
/// link::nvlink_identity(): a worker whose own differs links nothing and
/// answers unavailable.
std::string encode_nvlink_request(const std::vector<link::NvInput>& inputs,
                                  const std::string& arch, bool device_runtime,
                                  const Toolchain& toolchain);

/// What a request asks.
enum class Op {
  compile,      ///< compile job for target
  read_bitcode, ///< read job.bitcode (named job.entry) and compile nothing
  nvlink,       ///< link nv_inputs for target.spec (the arch)
};

struct Request {
  JobInput job;
  TargetDesc target;
  CodegenOptions options;
  Toolchain toolchain;
  Op op = Op::compile;
  std::vector<link::NvInput> nv_inputs; ///< Op::nvlink
  bool device_runtime = false;          ///< Op::nvlink
  std::string nv_identity;              ///< Op::nvlink: the parent's link::nvlink_identity()
};

/// A request, or an internal error when the message is malformed.
Result<Request> decode_request(const std::string& message);

std::string encode_response(const Result<std::vector<CompiledArtifact>>& result,
                            const std::vector<std::string>& warnings = {});

/// The job's result as the worker gave it (artifacts or its Error, fields
/// kept); nullopt with `*why` set when the message is malformed.
/// The job's LLVM warnings are appended to `*warnings` where given.
std::optional<Result<std::vector<CompiledArtifact>>>
decode_response(const std::string& message, std::string* why,
                std::vector<std::string>* warnings = nullptr);

/// The 8-byte length prefix of a message of `size` bytes.
std::string frame_header(uint64_t size);

/// The length a frame header (8 bytes at `p`) announces.
uint64_t frame_length(const char* p);

/// Blocking I/O for the worker's side: reads one message; false at end of
/// file, on an error or on a malformed frame.
bool read_message(int fd, std::string* out);

/// Writes one message (send with MSG_NOSIGNAL: a closed peer is an error,
/// never SIGPIPE); false on an error.
bool write_message(int fd, const std::string& message);

} // namespace kiln::codegen::worker
