#include "codegen/ptxas.h"

#include "link/nvjitlink.h"
#include "support/files.h"
#include "support/process.h"

#include <atomic>
#include <cstdlib>
#include <unistd.h>
#include <vector>

#ifdef KILN_HAVE_NVPTXCOMPILER
#include <nvPTXCompiler.h>
#endif

namespace kiln::codegen {

bool ptx_compiler_linked() {
#ifdef KILN_HAVE_NVPTXCOMPILER
  return true;
#else
  return false;
#endif
}

const std::string& ptxas_path() {
  static const std::string path = [] {
    if (const char* p = std::getenv("KILN_PTXAS"); p && std::string(p) != kAssembleAtLink)
      return std::string(p); // empty disables cubin generation
    return find_cuda_program("ptxas");
  }();
  return path;
}

namespace {
std::atomic<bool> g_assembler_resolved{false};
} // namespace

bool ptx_assembler_resolved() { return g_assembler_resolved.load(std::memory_order_acquire); }

PtxAssembler ptx_assembler() {
  static const PtxAssembler assembler = [] {
    if (const char* p = std::getenv("KILN_PTXAS")) {
      if (!*p)
        return PtxAssembler::none;
      return std::string(p) == kAssembleAtLink ? PtxAssembler::link : PtxAssembler::program;
    }
    if (ptx_compiler_linked())
      return PtxAssembler::library;
    // nvJitLink at the image link before a ptxas process per job: no process
    // start per job (about 14 ms each), a closure's PTX assembled in one
    // call, and a plan's images linked in parallel (as many at once as it
    // compiles jobs). A 200-kernel sm_90 unit precompiles in 4.5 s at -j1
    // and 2.7 s at -j2 this way, against 10.6 s and 6.5 s with the program
    // (bench/results.md). The program remains where nvJitLink is missing.
    if (link::nvjitlink_fingerprint())
      return PtxAssembler::link;
    return ptxas_path().empty() ? PtxAssembler::none : PtxAssembler::program;
  }();
  g_assembler_resolved.store(true, std::memory_order_release);
  return assembler;
}

namespace {

std::string program_version() {
  auto r = run_process({ptxas_path(), "--version"});
  if (!r || r->exit_code != 0)
    return {};
  // Last line with a "V<major>.<minor>.<patch>" word, e.g. "... release 13.0, V13.0.88".
  size_t v = r->output.rfind(", V");
  if (v == std::string::npos)
    return "ptxas unknown";
  size_t end = r->output.find_first_of("\r\n", v);
  return "ptxas " +
         r->output.substr(v + 2, end == std::string::npos ? std::string::npos : end - v - 2);
}

Result<std::string> assemble_with_program(const std::string& ptx, const std::string& arch,
                                          const std::string& what) {
  KILN_TRY_ASSIGN(auto dir, TempDir::create("kiln-ptxas"));
  std::string in = dir.path() + "/job.ptx", out = dir.path() + "/job.cubin";
  KILN_TRY(write_scratch_file(in, ptx)); // read once, by ptxas, then removed
  // ptxas starts by building most of its 25 MB heap, and a fresh process
  // pays a page fault per 4 KiB of it: transparent huge pages and one heap
  // for large blocks take about a fifth off each run (unless the user's
  // environment sets GLIBC_TUNABLES; glibc ignores tunables it lacks).
  auto r = run_process({ptxas_path(), "-c", "-arch=" + arch, "-o", out, in},
                       {"GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432"});
  if (!r)
    return r.error().context(what);
  if (r->exit_code != 0) {
    // ptxas names its input by the temporary file: name the job's PTX instead.
    std::string log = r->output;
    for (size_t at; (at = log.find(in)) != std::string::npos;)
      log.replace(at, in.size(), "job.ptx");
    return make_error(Code::internal, what + ": ptxas -arch=" + arch + " failed (exit " +
                                          std::to_string(r->exit_code) + "): " + log);
  }
  return read_file(out);
}

#ifdef KILN_HAVE_NVPTXCOMPILER

std::string result_name(nvPTXCompileResult r) {
  switch (r) {
  case NVPTXCOMPILE_SUCCESS: return "NVPTXCOMPILE_SUCCESS";
  case NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE:
    return "NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE";
  case NVPTXCOMPILE_ERROR_INVALID_INPUT: return "NVPTXCOMPILE_ERROR_INVALID_INPUT";
  case NVPTXCOMPILE_ERROR_COMPILATION_FAILURE: return "NVPTXCOMPILE_ERROR_COMPILATION_FAILURE";
  case NVPTXCOMPILE_ERROR_INTERNAL: return "NVPTXCOMPILE_ERROR_INTERNAL";
  case NVPTXCOMPILE_ERROR_OUT_OF_MEMORY: return "NVPTXCOMPILE_ERROR_OUT_OF_MEMORY";
  case NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE:
    return "NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE";
  case NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION:
    return "NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION";
  default: return "nvPTXCompileResult " + std::to_string(int(r));
  }
}

std::string library_version() {
  unsigned major = 0, minor = 0;
  std::string v = nvPTXCompilerGetVersion(&major, &minor) == NVPTXCOMPILE_SUCCESS
                      ? "V" + std::to_string(major) + "." + std::to_string(minor)
                      : std::string("unknown");
  return "ptxas " + v + " in process (libnvptxcompiler_static " KILN_NVPTXCOMPILER_ID ")";
}

// One compiler handle, destroyed however the assembly ends.
class Compiler {
public:
  ~Compiler() {
    if (handle_)
      nvPTXCompilerDestroy(&handle_);
  }
  nvPTXCompilerHandle& handle() { return handle_; }

  // The error log (the info log where that is empty), without trailing newlines.
  std::string log() const {
    std::string text = read(nvPTXCompilerGetErrorLogSize, nvPTXCompilerGetErrorLog);
    if (text.empty())
      text = read(nvPTXCompilerGetInfoLogSize, nvPTXCompilerGetInfoLog);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0'))
      text.pop_back();
    return text;
  }

private:
  template <class Size, class Get>
  std::string read(Size size, Get get) const {
    size_t n = 0;
    if (!handle_ || size(handle_, &n) != NVPTXCOMPILE_SUCCESS || n == 0)
      return {};
    std::string text(n, '\0');
    if (get(handle_, text.data()) != NVPTXCOMPILE_SUCCESS)
      return {};
    text.resize(text.find('\0') == std::string::npos ? n : text.find('\0'));
    return text;
  }

  nvPTXCompilerHandle handle_ = nullptr;
};

Result<std::string> assemble_in_process(const std::string& ptx, const std::string& arch,
                                        const std::string& what) {
  // The options "ptxas -c -arch=<arch>" gets: relocatable code at the
  // default optimization level (-O3). No explicit -O: with it, PTX carrying
  // debug info (-g jobs) fails ("Optimized debugging not supported").
  const std::string gpu = "--gpu-name=" + arch;
  const std::vector<const char*> options = {gpu.c_str(), "--compile-only"};
  auto failed = [&](const Compiler& c, const char* step, nvPTXCompileResult r) {
    std::string msg =
        what + ": nvPTXCompiler " + gpu + " failed in " + step + " (" + result_name(r) + ")";
    if (std::string log = c.log(); !log.empty())
      msg += ": " + log;
    return make_error(Code::internal, msg);
  };
  Compiler c;
  if (nvPTXCompileResult r = nvPTXCompilerCreate(&c.handle(), ptx.size(), ptx.data());
      r != NVPTXCOMPILE_SUCCESS)
    return failed(c, "nvPTXCompilerCreate", r);
  if (nvPTXCompileResult r = nvPTXCompilerCompile(c.handle(), int(options.size()), options.data());
      r != NVPTXCOMPILE_SUCCESS)
    return failed(c, "nvPTXCompilerCompile", r);
  size_t size = 0;
  if (nvPTXCompileResult r = nvPTXCompilerGetCompiledProgramSize(c.handle(), &size);
      r != NVPTXCOMPILE_SUCCESS)
    return failed(c, "nvPTXCompilerGetCompiledProgramSize", r);
  std::string cubin(size, '\0');
  if (nvPTXCompileResult r = nvPTXCompilerGetCompiledProgram(c.handle(), cubin.data());
      r != NVPTXCOMPILE_SUCCESS)
    return failed(c, "nvPTXCompilerGetCompiledProgram", r);
  return cubin;
}

#endif

} // namespace

const std::string& ptxas_version() {
  static const std::string version = []() -> std::string {
    switch (ptx_assembler()) {
    case PtxAssembler::none: return {};
    case PtxAssembler::program: return program_version();
    case PtxAssembler::link: {
      auto fp = link::nvjitlink_fingerprint();
      return fp ? *fp + " at the image link" : std::string("nvJitLink unavailable");
    }
    case PtxAssembler::library:
#ifdef KILN_HAVE_NVPTXCOMPILER
      return library_version();
#else
      break;
#endif
    }
    return {};
  }();
  return version;
}

Result<std::string> assemble_ptx(const std::string& ptx, const std::string& arch,
                                 const std::string& what) {
  switch (ptx_assembler()) {
  case PtxAssembler::none: break;
  case PtxAssembler::link:
    return make_error(Code::unavailable,
                      what + ": assembly is deferred to the image link (nvJitLink); set "
                             "KILN_PTXAS to a ptxas program to assemble each job");
  case PtxAssembler::program: return assemble_with_program(ptx, arch, what);
  case PtxAssembler::library:
#ifdef KILN_HAVE_NVPTXCOMPILER
    return assemble_in_process(ptx, arch, what);
#else
    break;
#endif
  }
  return make_error(Code::unavailable, what + ": no ptxas (set KILN_PTXAS or CUDA_HOME)");
}

} // namespace kiln::codegen
