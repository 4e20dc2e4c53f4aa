// The toolkit's ptxas program as the linker of one-module NVIDIA images.
#include "link/ptxas_program.h"

#include "support/fault.h"
#include "support/files.h"
#include "support/process.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::link {

namespace {

// KILN_PTXAS's value that leaves every image to nvJitLink (codegen/ptxas.h's
// kAssembleAtLink: the same setting, read by the layer that links).
constexpr const char* kNvJitLinkOnly = "nvjitlink";

struct Version {
  std::string text; ///< "ptxas V13.0.88"; empty: see error
  std::string error;
};

const Version& version() {
  static Version v;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string& path = ptxas_program_path();
    if (path.empty()) {
      v.error = "no ptxas program (KILN_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin, $PATH)";
      return;
    }
    auto r = run_process({path, "--version"});
    if (!r || r->exit_code != 0) {
      v.error = path + " --version failed" + (r ? ": " + r->output : ": " + r.error().message);
      return;
    }
    // "Cuda compilation tools, release 13.0, V13.0.88": the last ", V" word.
    size_t at = r->output.rfind(", V");
    if (at == std::string::npos) {
      v.error = path + " --version does not name its version";
      return;
    }
    size_t end = r->output.find_first_of("\r\n", at);
    v.text = "ptxas " + r->output.substr(at + 2, end == std::string::npos ? end : end - at - 2);
  });
  return v;
}

} // namespace

const std::string& ptxas_program_path() {
  static const std::string path = []() -> std::string {
    if (const char* p = std::getenv("KILN_PTXAS"))
      return std::string(p) == kNvJitLinkOnly ? std::string() : std::string(p);
    return find_cuda_program("ptxas"); // as codegen/ptxas.cpp finds it
  }();
  return path;
}

Result<std::string> ptxas_program_version() {
  const Version& v = version();
  if (v.text.empty())
    return make_error(Code::unavailable, v.error);
  return v.text;
}

Result<std::string> ptxas_program_fingerprint() {
  KILN_TRY_ASSIGN(auto v, ptxas_program_version());
  // "parts per 16 kernels": the --split-compile count (nv_assembly_parts).
  return v + " whole program; parts per 16 kernels";
}

Result<std::string> ptxas_whole_program(const std::string& ptx, const std::string& arch,
                                        int parts, const std::string& what) {
  if (ptxas_program_path().empty())
    return make_error(Code::unavailable, "no ptxas program to assemble " + what + " for " + arch)
        .with_target(arch);
  if (fault::hit("link:ptxas"))
    return make_error(Code::internal, fault::message("link:ptxas") + " (assembling " + what +
                                          " for " + arch + ")")
        .with_target(arch);
  // The version goes into the image key: asked beside the assembly (its own
  // process), not before it.
  std::jthread ask([] { (void)version(); }); // joined on every way out
  auto run = [&]() -> Result<ProcessResult> {
    KILN_TRY_ASSIGN(auto dir, TempDir::create("kiln-ptxas"));
    std::string in = dir.path() + "/image.ptx", out = dir.path() + "/image.cubin";
    KILN_TRY(write_scratch_file(in, ptx));
    std::vector<std::string> argv = {ptxas_program_path(), "-arch=" + arch, "-o", out};
    if (parts > 1)
      argv.push_back("--split-compile=" + std::to_string(parts));
    argv.push_back(in);
    // ptxas builds most of a 25 MB heap first, a page fault per 4 KiB in a
    // fresh process: transparent huge pages and one heap for large blocks
    // take about a fifth off (glibc ignores tunables it lacks).
    KILN_TRY_ASSIGN(auto r, run_process(argv, {"GLIBC_TUNABLES=glibc.malloc.hugetlb=1:"
                                               "glibc.malloc.mmap_threshold=33554432"}));
    if (r.exit_code == 0) {
      KILN_TRY_ASSIGN(auto cubin, read_file(out));
      r.output = std::move(cubin);
      return r;
    }
    // ptxas names its input by the temporary file: name the module instead.
    for (size_t at; (at = r.output.find(in)) != std::string::npos;)
      r.output.replace(at, in.size(), "image.ptx");
    return r;
  };
  auto r = run();
  ask.join();
  if (!r)
    return r.error().context("assembling " + what + " for " + arch).with_target(arch);
  if (r->exit_code != 0)
    return make_error(Code::internal, "ptxas -arch=" + arch + " (whole program) failed on " +
                                          what + " (exit " + std::to_string(r->exit_code) +
                                          "): " + r->output)
        .with_target(arch);
  return std::move(r->output);
}

} // namespace kiln::link
