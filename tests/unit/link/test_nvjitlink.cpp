// Unit tests for nvJitLink, dlopen'd (src/link/nvjitlink.cpp): a closure's
// NVIDIA pieces (PTX or relocatable cubins) linked into one cubin defining
// every member, errors naming the architecture, or a clear reason why not.
#include "codegen/worker/pool.h"
#include "codegen/worker/protocol.h"
#include "codegen/ptxas.h"
#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"
#include "fixtures/files.hpp"
#include "fixtures/process.hpp"
#include "fixtures/worker.hpp"
#include "link/nvjitlink.h"
#include "support/fault.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include <signal.h>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

// A closure's sm_90 code (PTX, or relocatable cubins unless `ptx`) linked by
// nvJitLink: an ELF file for the CUDA machine.
ElfInfo linked_cubin(const ClosureArtifacts& c, bool ptx) {
  std::vector<link::NvInput> in;
  for (size_t i = 0; i < c.blobs.size(); ++i)
    in.push_back({c.names[i], c.blobs[i], ptx});
  auto cubin = link::nvjitlink_cubin(in, "sm_90");
  INFO((cubin ? std::string() : cubin.error().message));
  REQUIRE(cubin);
  auto elf = read_elf(*cubin);
  REQUIRE(elf);
  CHECK(elf->machine == kElfMachineCuda);
  return elf.take();
}

bool have_nvjitlink() {
  auto fp = link::nvjitlink_fingerprint();
  if (fp)
    return true;
  MESSAGE("skipped: " << fp.error().message);
  return false;
}

} // namespace

TEST_CASE("nvJitLink links a closure's sm_90 code into a cubin, or says why it cannot") {
  auto fp = link::nvjitlink_fingerprint();
  if (!fp) {
    CHECK(fp.error().code == Code::unavailable);
    CHECK(fp.error().message.find("nvJitLink") != std::string::npos);
    MESSAGE("nvJitLink is not installed: " << fp.error().message);
    return;
  }
  CHECK(fp->rfind("nvJitLink ", 0) == 0);
  TempDir dir = temp_dir("kiln-nvjitlink-test");
  linked_cubin(compile_closure(dir, "gpu_nvptx.ll", "k_fact", "sm_90", "ptx"), true);

  // A broken input is refused with nvJitLink's own log in the message.
  auto bad = link::nvjitlink_cubin({{"broken", ".version 99.9\n garbage", true}}, "sm_90");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("broken") != std::string::npos);
}

namespace {

// Links a closure's `format` artifacts (every member of k_cycle) and checks
// the cubin defines every member.
void check_closure_links(const std::string& format) {
  TempDir dir = temp_dir("kiln-nvjitlink-test");
  ClosureArtifacts c = compile_closure(dir, "gpu_nvptx.ll", "k_cycle", "sm_90", format);
  REQUIRE(c.blobs.size() == 4); // the kernel and the three-cycle
  ElfInfo elf = linked_cubin(c, format == "ptx");
  CHECK(elf.type == 2); // ET_EXEC: loadable as is
  std::set<std::string> defined = defined_symbols(elf);
  for (const std::string& s : c.symbols)
    CHECK_MESSAGE(defined.count(s), s);
}

} // namespace

TEST_CASE("nvJitLink: the cubin defines every member from the jobs' PTX") {
  if (!have_nvjitlink())
    return;
  check_closure_links("ptx");
}

// Jobs store relocatable cubins only where a ptxas program (or the PTX
// compiler library) assembles each job: a child process with KILN_PTXAS.
TEST_CASE("nvJitLink: the cubin defines every member from the jobs' relocatable cubins") {
  if (!have_nvjitlink())
    return;
  if (child_role() != "ptxas-program") {
    if (codegen::ptxas_path().empty()) {
      MESSAGE("relocatable cubins skipped: no ptxas");
      return;
    }
    check_child(run_child("nvJitLink: the cubin defines every member from the jobs' "
                          "relocatable cubins",
                          "ptxas-program", {"KILN_PTXAS=" + codegen::ptxas_path()}));
    return;
  }
  child_ran();
  REQUIRE(codegen::ptx_assembler() == codegen::PtxAssembler::program);
  check_closure_links("cubin");
}

TEST_CASE("nvJitLink: failures are internal errors naming the architecture") {
  if (!have_nvjitlink())
    return;
  auto bad = link::nvjitlink_cubin({{"broken", ".version 99.9\n garbage", true}}, "sm_90");
  REQUIRE_FALSE(bad);
  INFO(bad.error().message);
  CHECK(bad.error().code == Code::internal);
  CHECK(bad.error().target == "sm_90");
  // PTX that does not assemble names the input (the job) and carries ptxas's log.
  CHECK(bad.error().message.rfind("nvJitLink (sm_90) could not assemble the PTX of broken: ", 0) ==
        0);
  CHECK(bad.error().message.find("Unsupported .version 99.9") != std::string::npos);

  fault::set_plan("link:nvjitlink");
  std::string injected_message = fault::message("link:nvjitlink");
  auto injected = link::nvjitlink_cubin({{"unused", "unused", true}}, "sm_80");
  fault::set_plan("");
  REQUIRE_FALSE(injected);
  CHECK(injected.error().code == Code::internal);
  CHECK(injected.error().target == "sm_80");
  CHECK(injected.error().message == injected_message + " (linking for sm_80)");
  CHECK(injected_message.find("link:nvjitlink") != std::string::npos);
}

TEST_CASE("nvJitLink: an empty KILN_NVJITLINK switches it off") {
  if (child_role() != "nvjitlink-off") {
    check_child(run_child("nvJitLink: an empty KILN_NVJITLINK switches it off", "nvjitlink-off",
                          {"KILN_NVJITLINK="}));
    return;
  }
  child_ran();
  auto fp = link::nvjitlink_fingerprint();
  REQUIRE_FALSE(fp);
  CHECK(fp.error().code == Code::unavailable);
  CHECK(fp.error().message == "nvJitLink is disabled (KILN_NVJITLINK is empty)");
  auto cubin = link::nvjitlink_cubin({{"x", "x", true}}, "sm_90");
  REQUIRE_FALSE(cubin);
  CHECK(cubin.error().code == Code::unavailable);
  CHECK(cubin.error().message == fp.error().message);
}

namespace {

// k_cycle's closure as nvJitLink inputs: the PTX of its four jobs.
std::vector<link::NvInput> cycle_ptx() {
  TempDir dir = temp_dir("kiln-nvjitlink-test");
  ClosureArtifacts c = compile_closure(dir, "gpu_nvptx.ll", "k_cycle", "sm_90", "ptx");
  std::vector<link::NvInput> in;
  for (size_t i = 0; i < c.blobs.size(); ++i)
    in.push_back({c.names[i], c.blobs[i], true});
  return in;
}

} // namespace

TEST_CASE("nvJitLink in a worker: the same cubin as in this process, and the same errors") {
  if (!have_nvjitlink())
    return;
  std::vector<link::NvInput> in = cycle_ptx();
  REQUIRE(codegen::codegen_isolation_enabled());
  uint64_t started = codegen::worker_pool_stats().started;
  auto here = link::nvjitlink_cubin(in, "sm_90");
  REQUIRE(here);
  for (int round = 0; round < 2; ++round) {
    auto there = codegen::nvlink_isolated(in, "sm_90", false);
    INFO((there ? std::string() : there.error().message));
    REQUIRE(there);
    CHECK(*there == *here); // byte for byte, on a new worker and a reused one
  }
  CHECK(codegen::worker_pool_stats().started <= started + 1);
  // nvJitLink's own refusal comes back as it is given here.
  std::vector<link::NvInput> broken = {{"broken", ".version 99.9\n garbage", true}};
  auto bad_here = link::nvjitlink_cubin(broken, "sm_90");
  auto bad_there = codegen::nvlink_isolated(broken, "sm_90", false);
  REQUIRE_FALSE(bad_here);
  REQUIRE_FALSE(bad_there);
  CHECK(bad_there.error().code == bad_here.error().code);
  CHECK(bad_there.error().message == bad_here.error().message);
}

TEST_CASE("nvJitLink in a worker: a worker that dies during the link is that link's error") {
  if (!have_nvjitlink())
    return;
  std::vector<link::NvInput> in = cycle_ptx();
  auto here = link::nvjitlink_cubin(in, "sm_90");
  REQUIRE(here);
  std::optional<Result<std::string>> result;
  int killed = -1;
  // The link may finish before the kill lands: then try again.
  for (int attempt = 0; attempt < 20 && !(result && !*result); ++attempt) {
    result.reset();
    std::thread t([&] { result = codegen::nvlink_isolated(in, "sm_90", false); });
    std::vector<int> busy;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((busy = codegen::worker_pool_stats().busy_pids).empty() && !result &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    if (!busy.empty()) {
      killed = busy.front();
      ::kill(killed, SIGKILL);
    }
    t.join();
    REQUIRE(result);
  }
  if (*result) {
    MESSAGE("skipped: every link finished before its worker was killed");
    return;
  }
  const Error& e = result->error();
  INFO(e.message);
  CHECK(e.code == Code::internal);
  CHECK(e.target == "sm_90");
  CHECK(e.message.find("linking an image for sm_90: nvJitLink crashed: its worker process (pid " +
                       std::to_string(killed) + ") was killed by signal 9 (SIGKILL)") !=
        std::string::npos);
  // The next link takes a new worker and gives the same cubin.
  auto again = codegen::nvlink_isolated(in, "sm_90", false);
  REQUIRE(again);
  CHECK(*again == *here);
}

namespace {

// A PTX module of `kernels` small kernels, k<first>.., each storing its index.
std::string many_kernels_ptx(int first, int kernels) {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\n";
  for (int i = first; i < first + kernels; ++i)
    ptx += (i % 2 ? "  .visible .entry k" : ".visible\t.entry k") + std::to_string(i) +
           "(.param .u64 p)\n{\n  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n"
           "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd1, %rd1;\n"
           "  mov.u32 %r1, " +
           std::to_string(i) + ";\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n\n";
  return ptx;
}

} // namespace

TEST_CASE("nvJitLink: a module of many kernels is assembled in parts that follow from it") {
  using link::nv_assembly_parts;
  auto parts = [](int kernels) { return nv_assembly_parts({{"m", many_kernels_ptx(0, kernels), true}}); };
  CHECK(parts(0) == 1);
  CHECK(parts(1) == 1);
  CHECK(parts(31) == 1);
  CHECK(parts(32) == 2);
  CHECK(parts(40) == 2);
  CHECK(parts(1000) == 8);
  // Counted over every PTX input; a relocatable cubin, a .func, a comment
  // or a declaration-looking word elsewhere on a line is no kernel.
  std::vector<link::NvInput> two = {{"a", many_kernels_ptx(0, 20), true},
                                    {"b", many_kernels_ptx(20, 20), true}};
  CHECK(nv_assembly_parts(two) == 2);
  // 31 kernels: one more counted would make two parts.
  std::string others = many_kernels_ptx(0, 31) + ".func f()\n{\n ret;\n}\n// .entry k\n" +
                       "\t// .visible .entry k\n.visible .entryx y\n";
  CHECK(nv_assembly_parts({{"c", others, true}}) == 1);
  CHECK(nv_assembly_parts({{"cubin", many_kernels_ptx(0, 40), false}}) == 1);

  if (!have_nvjitlink())
    return;
  // The parts give one cubin defining every kernel, the same bytes each
  // time and on any number of threads at once, and the same from two inputs
  // (merged into one module) as from one.
  auto one = link::nvjitlink_cubin({{"m", many_kernels_ptx(0, 40), true}}, "sm_90");
  INFO((one ? std::string() : one.error().message));
  REQUIRE(one);
  auto elf = read_elf(*one);
  REQUIRE(elf);
  std::set<std::string> defined = defined_symbols(*elf);
  for (int i = 0; i < 40; ++i)
    CHECK_MESSAGE(defined.count("k" + std::to_string(i)), i);
  std::vector<Result<std::string>> again(3, make_error(Code::internal, "not run"));
  std::vector<std::thread> threads;
  for (auto& r : again)
    threads.emplace_back([&r] { r = link::nvjitlink_cubin({{"m", many_kernels_ptx(0, 40), true}}, "sm_90"); });
  for (auto& t : threads)
    t.join();
  for (const auto& r : again) {
    REQUIRE(r);
    CHECK(*r == *one);
  }
  auto merged = link::nvjitlink_cubin(two, "sm_90");
  REQUIRE(merged);
  auto merged_elf = read_elf(*merged);
  REQUIRE(merged_elf);
  CHECK(defined_symbols(*merged_elf) == defined);
}

TEST_CASE("nvJitLink in a worker: links with this process's nvJitLink, whatever the environment "
          "says later") {
  if (!have_nvjitlink())
    return;
  std::vector<link::NvInput> in = cycle_ptx();
  auto here = link::nvjitlink_cubin(in, "sm_90"); // this process's nvJitLink, found once
  REQUIRE(here);
  REQUIRE_FALSE(link::nvjitlink_path().empty());
  codegen::stop_idle_workers();
  // A new worker starts with this environment, which names no nvJitLink
  // and no device runtime: it must still link with this process's.
  EnvVar no_nvjitlink("KILN_NVJITLINK", "");
  EnvVar no_home("CUDA_HOME", "/nonexistent");
  EnvVar no_devrt("KILN_CUDADEVRT", "/nonexistent/libcudadevrt.a");
  codegen::WorkerPoolStats before = codegen::worker_pool_stats();
  auto there = codegen::nvlink_isolated(in, "sm_90", false);
  INFO((there ? std::string() : there.error().message));
  REQUIRE(there);
  CHECK(*there == *here);
  codegen::WorkerPoolStats after = codegen::worker_pool_stats();
  CHECK(after.started > before.started);
  CHECK(after.links_declined == before.links_declined); // linked there, not here
  codegen::stop_idle_workers();
}

TEST_CASE("kiln-codegen-worker: links an NVIDIA image only with the nvJitLink its parent names") {
  if (!have_nvjitlink())
    return;
  std::vector<link::NvInput> in = cycle_ptx();
  auto here = link::nvjitlink_cubin(in, "sm_90");
  REQUIRE(here);
  std::string request = codegen::worker::encode_nvlink_request(in, "sm_90", false, {});
  // One that finds the same nvJitLink links, byte for byte; one that finds
  // none (its environment switches it off, and the request names no
  // toolchain) refuses, naming both, and links nothing.
  for (bool same : {true, false}) {
    CAPTURE(same);
    RawWorker w = start_raw_worker(same ? std::vector<std::string>{}
                                        : std::vector<std::string>{"KILN_NVJITLINK="});
    std::string hello, reply, why;
    REQUIRE(codegen::worker::read_message(w.socket, &hello));
    REQUIRE(codegen::worker::write_message(w.socket, request));
    REQUIRE(codegen::worker::read_message(w.socket, &reply));
    auto r = codegen::worker::decode_response(reply, &why);
    INFO(why);
    REQUIRE(r);
    if (same) {
      REQUIRE(*r);
      REQUIRE((*r)->size() == 1);
      CHECK((**r)[0].bytes == *here);
    } else {
      REQUIRE_FALSE(*r);
      CHECK(r->error().code == Code::unavailable);
      CHECK(r->error().message == "this worker links with no nvJitLink: nvJitLink is disabled "
                                  "(KILN_NVJITLINK is empty); " +
                                      link::cuda_device_runtime_fingerprint() + ", not " +
                                      link::nvlink_identity());
    }
    w.finish();
  }
}

// Run in a child whose device runtime is a copy: the copy changes on disk
// after this process read it, so a new worker, told the same file, reads
// other bytes than the image's key names.
TEST_CASE("nvJitLink in a worker: a worker that finds other tools declines and the link is made "
          "here") {
  if (!have_nvjitlink())
    return;
  const char* name = "nvJitLink in a worker: a worker that finds other tools declines and the "
                     "link is made here";
  if (child_role() != "changed-devrt") {
    std::string devrt = link::cuda_device_runtime_path();
    if (devrt.empty()) {
      MESSAGE("skipped: no libcudadevrt to copy");
      return;
    }
    TempDir dir = temp_dir("kiln-devrt-test");
    std::string copy = dir.path() + "/libcudadevrt.a";
    std::filesystem::copy_file(devrt, copy);
    check_child(run_child(name, "changed-devrt", {"KILN_CUDADEVRT=" + copy}));
    return;
  }
  child_ran();
  std::string copy = std::getenv("KILN_CUDADEVRT");
  REQUIRE(link::cuda_device_runtime_path() == copy);
  std::vector<link::NvInput> in = cycle_ptx();
  auto here = link::nvjitlink_cubin(in, "sm_90");
  REQUIRE(here);
  std::string identity = link::nvlink_identity(); // reads and hashes the copy
  {
    std::ofstream out(copy, std::ios::binary | std::ios::app);
    out << "changed";
  }
  codegen::stop_idle_workers();
  codegen::WorkerPoolStats before = codegen::worker_pool_stats();
  auto there = codegen::nvlink_isolated(in, "sm_90", false);
  INFO((there ? std::string() : there.error().message));
  REQUIRE(there);
  CHECK(*there == *here);
  CHECK(codegen::worker_pool_stats().links_declined == before.links_declined + 1);
  CHECK(link::nvlink_identity() == identity); // this process keeps what it read
  codegen::stop_idle_workers();
}

TEST_CASE("nvjitlink_warm_up: started once per process, and the links after it give the same "
          "cubin as a worker's") {
  if (!have_nvjitlink())
    return;
  std::vector<link::NvInput> in = cycle_ptx();
  // Twice, and from two threads: one warm-up; a link waits for it to end.
  std::thread other([] { link::nvjitlink_warm_up("sm_90", 78); });
  link::nvjitlink_warm_up("sm_90", 78);
  other.join();
  auto here = link::nvjitlink_cubin(in, "sm_90");
  REQUIRE(here);
  auto there = codegen::nvlink_isolated(in, "sm_90", false);
  REQUIRE(there);
  CHECK(*there == *here);
  // A PTX ISA of 0 (none known) starts nothing, and a link still works.
  link::nvjitlink_warm_up("sm_90", 0);
  CHECK(link::nvjitlink_cubin(in, "sm_90"));
}
