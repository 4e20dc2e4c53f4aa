// kiln-codegen-worker: compiles jobs for compile_job_isolated
// (codegen/worker/pool.cpp) in a process of its own, so that an LLVM crash ends
// this process and not the one that asked. Started with its socket on fd 0
// and its stdout and stderr on a pipe the parent reads; says hello, then
// answers one request at a time until the socket reaches end of file or the
// parent dies. Not meant to be run by hand.
#include "codegen/compile.h"
#include "codegen/llvm_target.h"
#include "codegen/worker/protocol.h"
#include "link/nvjitlink.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/PrettyStackTrace.h>
#include <llvm/Support/Signals.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <fcntl.h>
#include <malloc.h>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace {

int usage(const char* argv0) {
  std::fprintf(stderr,
               "%s: compiles jobs for Kiln's compile_job_isolated; started by the library, with "
               "its socket on standard input. Usage: %s --parent PID\n",
               argv0, argv0);
  return 2;
}

// While it lives, this process's address space may grow by 256 MiB plus 64
// times `input` bytes beyond what it has mapped now (a real module takes a
// few times its bitcode's size once read); the soft limit is set back after.
class AddressSpaceLimit {
public:
  explicit AddressSpaceLimit(size_t input) {
    if (::getrlimit(RLIMIT_AS, &old_) != 0)
      return;
    unsigned long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%lu", &pages) != 1)
        pages = 0;
      std::fclose(f);
    }
    if (pages == 0)
      return;
    rlim_t mapped = rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE));
    rlim_t budget = (rlim_t(256) << 20) + rlim_t(input) * 64;
    struct rlimit next = old_;
    next.rlim_cur = mapped + budget;
    if (old_.rlim_cur != RLIM_INFINITY && old_.rlim_cur < next.rlim_cur)
      return; // already tighter
    if (old_.rlim_max != RLIM_INFINITY && next.rlim_cur > old_.rlim_max)
      next.rlim_cur = old_.rlim_max;
    set_ = ::setrlimit(RLIMIT_AS, &next) == 0;
  }
  ~AddressSpaceLimit() {
    if (set_)
      (void)::setrlimit(RLIMIT_AS, &old_);
  }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

private:
  struct rlimit old_ {};
  bool set_ = false;
};

namespace worker = kiln::codegen::worker;

/// The parent's pid, from `--parent PID`; 0 when the arguments are not that.
long parent_from(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "--parent") != 0)
    return 0;
  char* end = nullptr;
  long parent = std::strtol(argv[2], &end, 10);
  if (!end || *end || parent <= 1)
    return 0;
  return parent;
}

/// The socket, moved off fd 0 (and out of reach of ptxas and other programs
/// run from here); standard input becomes /dev/null. -1 when there is none.
int take_socket() {
  int chan = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  if (chan < 0) {
    std::perror("kiln-codegen-worker: no socket on standard input");
    return -1;
  }
  int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  return chan;
}

/// A crash prints LLVM's error and the passes it was in; the parent keeps
/// the end of it for the job's error. Frames are not symbolized: that would
/// run llvm-symbolizer while the job waits.
void report_crashes(const char* argv0) {
  ::setenv("LLVM_DISABLE_SYMBOLIZATION", "1", 1);
  llvm::sys::PrintStackTraceOnErrorSignal(argv0, /*DisableCrashReporting=*/true);
  llvm::EnablePrettyStackTrace();
}

/// Takes the toolchain of the parent's first request, and the additions of
/// a later one that extends it; false when `request`'s toolchain is still
/// not this worker's.
bool adopt_toolchain(const worker::Request& request, std::optional<worker::Toolchain>& toolchain) {
  if (!toolchain || (request.toolchain != *toolchain &&
                     worker::toolchain_extends(*toolchain, request.toolchain))) {
    // Before anything reads them (the assembler and device libraries are
    // resolved at the first job that needs them, once; NVIDIA's may come
    // after a host or AMD job, before the first NVIDIA one).
    for (const auto& [name, value] : request.toolchain)
      ::setenv(name.c_str(), value.c_str(), 1);
    toolchain = request.toolchain;
  }
  return request.toolchain == *toolchain;
}

std::string link_cubin(const worker::Request& request) {
  if (request.nv_identity != kiln::link::nvlink_identity()) {
    // Told the parent's nvJitLink and device runtime (the toolchain), a
    // worker still finds others only if those files changed since: an
    // image must come from the tools its key names, so the parent links.
    return worker::encode_response(kiln::make_error(
        kiln::Code::unavailable, "this worker links with " + kiln::link::nvlink_identity() +
                                     ", not " + request.nv_identity));
  }
  auto image = kiln::link::nvjitlink_cubin(request.nv_inputs, request.target.spec,
                                           request.device_runtime);
  if (image)
    return worker::encode_response(
        std::vector<kiln::codegen::CompiledArtifact>{{"cubin", image.take()}});
  return worker::encode_response(image.error());
}

/// Reads the bitcode as ir::ingest reads it (every function materialised);
/// only whether the reader returns matters: its own errors are reported when
/// the caller reads it.
std::string read_bitcode(const worker::Request& request) {
  // Under an address-space limit that follows the input's size: a stream
  // that makes the reader allocate without end ends this worker (out of
  // memory), not the machine's memory, and the caller reports the input.
  AddressSpaceLimit limit(request.job.bitcode.size());
  llvm::LLVMContext ctx;
  auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(request.job.bitcode, request.job.entry),
                                  ctx);
  if (!m)
    llvm::consumeError(m.takeError());
  return worker::encode_response(std::vector<kiln::codegen::CompiledArtifact>{});
}

std::string compile(const worker::Request& request) {
  std::vector<std::string> warnings;
  auto result =
      kiln::codegen::compile_job(request.job, request.target, request.options, &warnings);
  return worker::encode_response(result, warnings);
}

/// The response to one request.
std::string answer(const kiln::Result<worker::Request>& request,
                   std::optional<worker::Toolchain>& toolchain) {
  if (!request)
    return worker::encode_response(request.error());
  if (!adopt_toolchain(*request, toolchain))
    return worker::encode_response(kiln::make_error(
        kiln::Code::internal, "the toolchain changed between two jobs of one worker"));
  if (request->op == worker::Op::nvlink)
    return link_cubin(*request);
  if (request->op == worker::Op::read_bitcode)
    return read_bitcode(*request);
  return compile(*request);
}

} // namespace

int main(int argc, char** argv) {
  const long parent = parent_from(argc, argv);
  if (parent == 0)
    return usage(argv[0]);

  // End with the parent, even if it is killed; if it died before this line
  // ran, getppid() is already another process.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != pid_t(parent))
    return 0;
  // Writes to a closed socket fail; they never kill the worker silently.
  std::signal(SIGPIPE, SIG_IGN);
  const int chan = take_socket();
  if (chan < 0)
    return 1;
  report_crashes(argv[0]);

  // nvJitLink allocates tables of a megabyte or more for every image it
  // links: kept in the heap between images rather than mapped and faulted
  // in again for each (as kiln-precompile does for itself).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);

  // Initialise LLVM's targets once, before saying hello.
  if (auto host = kiln::codegen::resolve_target("host"); !host) {
    std::fprintf(stderr, "kiln-codegen-worker: %s\n", host.error().message.c_str());
    return 1;
  }
  if (!worker::write_message(chan, worker::encode_hello()))
    return 0;

  std::string message;
  std::optional<worker::Toolchain> toolchain; ///< the parent's, from its first request
  while (worker::read_message(chan, &message)) {
    auto request = worker::decode_request(message);
    std::string response = answer(request, toolchain);
    message.clear();
    message.shrink_to_fit();
    if (!worker::write_message(chan, response))
      return 0;
  }
  return 0;
}
