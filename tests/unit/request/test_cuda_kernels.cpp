// CUDA kernels as clang-22 emits them (tests/data/cuda_*_sm90.ll, from the
// .cu sources quoted in each test), through the driver into images: kernels
// keep their source names, the CUDA driver's own functions (printf, assert,
// malloc, cudaGraphSetConditional) stay undefined as nvlink leaves them,
// dynamic parallelism links the device runtime, and the PTX ISA is the one
// the IR asks for.
#include "codegen/ptxas.h"
#include "codegen/llvm_target.h"
#include "core/check.h"
#include "core/keys.h"
#include "fixtures/cache.hpp"
#include "image/image.h"
#include "link/nvjitlink.h"
#include "storage/storage.h"
#include "support/elf.h"
#include "support/files.h"
#include "support/process.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>
#include <unistd.h>

using namespace kiln;
using namespace kiln::test;

namespace {

// Where ptxas and nvJitLink are installed, an sm_90 image can be linked.
bool can_link_sm90() {
  if (codegen::ptxas_path().empty()) {
    MESSAGE("skipped: no ptxas (the CUDA toolkit is not installed)");
    return false;
  }
  if (auto fp = link::nvjitlink_fingerprint(); !fp) {
    MESSAGE("skipped: " << fp.error().message);
    return false;
  }
  return true;
}

// Each root's linked image, as an ELF file, by root name.
std::map<std::string, ElfInfo> images_of(const TestCache& c) {
  auto store = open_store(c.path());
  storage::Storage storage(*store);
  std::map<std::string, ElfInfo> out;
  for (const RootReport& r : c.report.roots) {
    auto key = store->names().resolve_name(r.name, r.target);
    REQUIRE(key);
    auto closure = store->closures().get_closure(*key);
    REQUIRE(closure);
    auto image = image::fetch_or_link(storage, *closure);
    INFO((image ? std::string() : image.error().message));
    REQUIRE(image);
    auto elf = read_elf(*image);
    REQUIRE(elf);
    out[r.name] = elf.take();
  }
  return out;
}

struct Symbols {
  std::set<std::string> defined, undefined;
};

Symbols functions_of(const ElfInfo& elf) {
  Symbols s;
  for (const ElfSymbol& sym : elf.symbols)
    if (sym.function)
      (sym.defined ? s.defined : s.undefined).insert(sym.name);
  return s;
}

} // namespace

TEST_CASE("printf, assert and malloc kernels link for sm_90, keeping their names and the "
          "driver's functions undefined") {
  // cuda_printf.cu: report() calls printf and assert, scratch() malloc/free.
  if (!can_link_sm90())
    return;
  TestCache c = empty_cache("kiln-cuda-printf");
  c.report = precompile(data_request("cuda_printf_sm90.ll", {}, {"sm_90"}), c.path());
  REQUIRE(c.report.roots.size() == 2);
  for (const JobReport& j : c.report.jobs) {
    // A kernel job's symbol is its source name; the ISA is what clang asked.
    CHECK(j.symbol == j.entry);
    CHECK(j.features == "+ptx88");
  }
  auto images = images_of(c);
  Symbols report = functions_of(images.at("_Z6reportPKii"));
  CHECK(report.defined.count("_Z6reportPKii"));
  CHECK(report.undefined.count("vprintf"));
  CHECK(report.undefined.count("__assertfail"));
  Symbols scratch = functions_of(images.at("_Z7scratchiPi"));
  CHECK(scratch.defined.count("_Z7scratchiPi"));
  for (const std::string& u : report.undefined)
    CHECK(core::supplied_at_load(core::TargetKind::nvptx, u));
  for (const std::string& u : scratch.undefined)
    CHECK(core::supplied_at_load(core::TargetKind::nvptx, u));
}

TEST_CASE("dynamic parallelism links the CUDA device runtime into the sm_90 image") {
  // cuda_cdp.cu: parent() launches child<<<1, n>>> (clang -fgpu-rdc).
  if (!can_link_sm90())
    return;
  if (auto rt = link::cuda_device_runtime(); !rt) {
    MESSAGE("skipped: " << rt.error().message);
    return;
  }
  TestCache c = empty_cache("kiln-cuda-cdp");
  c.report = precompile(data_request("cuda_cdp_sm90.ll", {"_Z6parentPii"}, {"sm_90"}), c.path());
  Symbols parent = functions_of(images_of(c).at("_Z6parentPii"));
  CHECK(parent.defined.count("_Z6parentPii"));
  CHECK(parent.defined.count("__cudaCDP2LaunchDevice"));
  CHECK(parent.defined.count("__cudaCDP2GetParameterBuffer"));
  for (const std::string& u : parent.undefined)
    CHECK_MESSAGE(u.rfind("__cuda_syscall_", 0) == 0, u);
}

TEST_CASE("device graph control: cudaGraphSetConditional stays undefined for the driver, as "
          "nvlink leaves it, and the image passes its check") {
  // cuda_graph_conditional_sm90.ll: tests/kernels/cuda/graph_conditional.cu
  // (the CUDA samples' graphConditionalNodes kernels) by clang-22 for sm_90.
  if (!can_link_sm90())
    return;
  TestCache c = empty_cache("kiln-cuda-graph");
  c.report = precompile(data_request("cuda_graph_conditional_sm90.ll", {}, {"sm_90"}), c.path());
  REQUIRE(c.report.roots.size() == 3);
  auto images = images_of(c); // fetch_or_link checks each image
  for (const auto& [root, elf] : images) {
    CAPTURE(root);
    Symbols f = functions_of(elf);
    CHECK(f.defined.count(root));
    CHECK(f.undefined.count("cudaGraphSetConditional"));
    // Nothing of libcudadevrt: the driver, not the device runtime, has it.
    for (const std::string& d : f.defined)
      CHECK_MESSAGE(d.rfind("__cudaCDP2", 0) != 0, d);
    for (const std::string& u : f.undefined)
      CHECK(core::supplied_at_load(core::TargetKind::nvptx, u));
  }

  // The toolkit's own linker, given the same jobs' relocatable cubins, leaves
  // the same functions undefined. The roots' images are one unit image (the
  // unit's roots share it), so the comparison is over every job at once.
  std::string nvlink = (std::filesystem::path(codegen::ptxas_path()).parent_path() / "nvlink");
  if (::access(nvlink.c_str(), X_OK) != 0) {
    MESSAGE("nvlink comparison skipped: no " << nvlink);
    return;
  }
  auto store = open_store(c.path());
  TempDir dir = temp_dir("kiln-cuda-graph-nvlink");
  std::vector<std::string> argv = {nvlink, "-arch=sm_90"};
  for (size_t i = 0; i < c.report.jobs.size(); ++i) {
    const JobReport& j = c.report.jobs[i];
    CAPTURE(j.entry);
    std::string in = dir.path() + "/job" + std::to_string(i) + ".o";
    auto cubin = store->jobs().get_artifact(*parse_hash128(j.key), "cubin");
    if (cubin) {
      REQUIRE(write_file_atomic(in, *cubin));
    } else {
      // Jobs keep PTX only where nvJitLink assembles at the link: the
      // toolkit's ptxas makes the relocatable cubin nvlink takes.
      auto ptx = store->jobs().get_artifact(*parse_hash128(j.key), "ptx");
      REQUIRE(ptx);
      std::string src = dir.path() + "/job" + std::to_string(i) + ".ptx";
      REQUIRE(write_file_atomic(src, *ptx));
      auto a = run_process({codegen::ptxas_path(), "-c", "-arch=sm_90", src, "-o", in});
      REQUIRE(a);
      INFO(a->output);
      REQUIRE(a->exit_code == 0);
    }
    argv.push_back(in);
  }
  std::string out = dir.path() + "/all.cubin";
  argv.insert(argv.end(), {"-o", out});
  auto r = run_process(argv);
  REQUIRE(r);
  INFO(r->output);
  REQUIRE(r->exit_code == 0);
  auto linked = read_file(out);
  REQUIRE(linked);
  auto elf = read_elf(*linked);
  REQUIRE(elf);
  std::set<std::string> undefined;
  for (const auto& [root, image] : images)
    for (const std::string& u : functions_of(image).undefined)
      undefined.insert(u);
  CHECK(functions_of(*elf).undefined == undefined);
}

TEST_CASE("a call nothing supplies (not the unit, a device library or the driver) is that "
          "job's error, naming the function and the job; the unit's other jobs still plan") {
  // The graph kernels' IR with while_body's call of cudaGraphSetConditional
  // renamed to a function no one defines; the other two kernels call the
  // real one.
  std::string ir = graph_ir_with_undefined_call();
  CompileRequest req;
  req.inputs = {SourceInput::memory("typo.ll", ir)};
  req.targets = {"sm_90"};
  auto plan = Plan::create(req);
  REQUIRE(plan);
  CompileReport planned = plan->describe();
  size_t failed = 0, fine = 0;
  for (const JobReport& j : planned.jobs) {
    if (j.entry != "_Z10while_bodyPcy") {
      fine += j.status != JobStatus::failed || j.error.empty();
      continue;
    }
    ++failed;
    CHECK(j.status == JobStatus::failed);
    CHECK(j.error.find("'graph_set_conditional'") != std::string::npos);
    CHECK(j.error.find("job '_Z10while_bodyPcy'") != std::string::npos);
  }
  CHECK(failed == 1);
  CHECK(fine + failed == planned.jobs.size());
  CHECK(fine > 0); // the unit's other kernels
  for (const RootReport& r : planned.roots)
    CHECK((r.name == "_Z10while_bodyPcy") == !r.error.empty());
  // The real name plans every job.
  req.inputs = {SourceInput::memory("graph.ll", data_file("cuda_graph_conditional_sm90.ll"))};
  auto real = Plan::create(req);
  REQUIRE(real);
  for (const JobReport& j : real->describe().jobs)
    CHECK(j.error.empty());
}

TEST_CASE("partial success: a kernel that cannot be built fails alone; the unit's other "
          "roots are compiled, stored, named and linked, and a second run says the same") {
  std::string ir = graph_ir_with_undefined_call();
  TestCache c = empty_cache();
  CompileRequest req;
  req.inputs = {SourceInput::memory("typo.ll", ir)};
  req.targets = {"sm_90"};
  req.remote = "off";
  req.jobs = 2;
  for (int run = 0; run < 2; ++run) {
    CAPTURE(run);
    auto plan = Plan::create(req);
    REQUIRE(plan);
    auto report = plan->run(c.path());
    INFO((report ? std::string() : report.error().message));
    REQUIRE(report);
    CHECK_FALSE(report->ok());
    REQUIRE(report->roots.size() == 3);
    for (const RootReport& r : report->roots) {
      CAPTURE(r.name);
      if (r.name == "_Z10while_bodyPcy") {
        CHECK(r.closure.empty());
        CHECK(r.error.find("'graph_set_conditional'") != std::string::npos);
      } else {
        CHECK(r.error.empty());
        CHECK(r.closure.size() == 32);
        CHECK((r.image || !r.note.empty()));
      }
    }
    for (const JobReport& j : report->jobs)
      CHECK((j.status == JobStatus::failed) == (j.entry == "_Z10while_bodyPcy"));
  }
  c.open();
  auto named = c.store->names().resolve_name("_Z12if_conditionPKcy", "sm_90");
  CHECK(named);
  auto failed = c.store->names().resolve_name("_Z10while_bodyPcy", "sm_90");
  CHECK_FALSE(failed);
}

TEST_CASE("an NVIDIA image may leave only the driver's own functions undefined") {
  using core::TargetKind;
  // The PTX system calls, the device-side graph API, and what libcudadevrt
  // calls into the driver with: derived from the CUDA toolkit.
  for (const char* s : {"vprintf", "malloc", "free", "__assertfail",
                        "__cuda_syscall_cnpv2LaunchDevice", "cudaGraphSetConditional",
                        "cudaGraphLaunch", "cudaGraphKernelNodeSetParam", "cnpGetDevice"})
    CHECK(core::supplied_at_load(TargetKind::nvptx, s));
  // libdevice's and libcudadevrt's own functions are linked in, and a
  // declaration nothing defines (CDP1's cudaEventRecordWithFlags) is an error.
  for (const char* s : {"printf", "__cudaCDP2LaunchDevice", "cudaMalloc", "cudaCGGetRank",
                        "cudaEventRecordWithFlags", "__nv_sinf", "my_helper", "cudaGraph", ""})
    CHECK_FALSE(core::supplied_at_load(TargetKind::nvptx, s));
  CHECK_FALSE(core::supplied_at_load(TargetKind::amdgpu, "malloc"));
  CHECK_FALSE(core::supplied_at_load(TargetKind::host, "malloc"));
}

TEST_CASE("kernels keep their source names on GPU targets; other jobs get derived symbols") {
  core::JobIdentity id{"_Z6kernelPi", {}, {}};
  id.target.spec = "sm_90";
  id.target.kind = core::TargetKind::nvptx;
  CHECK(core::job_symbol(id, true) == "_Z6kernelPi");
  CHECK(core::job_symbol(id, false) == core::deferred_symbol(id));
  CHECK(core::is_job_symbol(id, "_Z6kernelPi"));
  CHECK(core::is_job_symbol(id, core::deferred_symbol(id)));
  CHECK_FALSE(core::is_job_symbol(id, "_Z5otherPi"));
  id.target.spec = "host";
  id.target.kind = core::TargetKind::host;
  CHECK(core::job_symbol(id, true) == core::deferred_symbol(id));
  CHECK_FALSE(core::is_job_symbol(id, "_Z6kernelPi"));
}

TEST_CASE("the PTX ISA of a job is the newer of the architecture's and the IR's, within the "
          "toolchain") {
  auto sm90 = codegen::resolve_target("sm_90");
  REQUIRE(sm90);
  int arch = codegen::ptx_isa_of(*sm90);
  CHECK(arch == 78);
  int newest = codegen::newest_ptx_isa();
  CHECK(newest >= arch);

  auto plain = codegen::job_target(*sm90, 0, "k");
  REQUIRE(plain);
  CHECK(plain->features == "+ptx78");
  auto asked = codegen::job_target(*sm90, newest, "k");
  REQUIRE(asked);
  CHECK(codegen::ptx_isa_of(*asked) == newest);
  auto older = codegen::job_target(*sm90, 60, "k");
  REQUIRE(older);
  CHECK(older->features == "+ptx78");

  auto beyond = codegen::job_target(*sm90, newest + 1, "_Z3bigv");
  REQUIRE_FALSE(beyond);
  CHECK(beyond.error().code == Code::invalid_argument);
  CHECK(beyond.error().entry == "_Z3bigv");
  CHECK(beyond.error().message.find("needs PTX ISA") != std::string::npos);
  CHECK(beyond.error().message.find("newest this toolchain offers") != std::string::npos);

  // Through the driver: the IR asks for more than any installed tool offers.
  std::string ir = data_file("cuda_printf_sm90.ll");
  for (size_t at; (at = ir.find("+ptx88")) != std::string::npos;)
    ir.replace(at, 6, "+ptx" + std::to_string(newest + 10));
  CompileRequest req;
  req.inputs = {SourceInput::memory("future.ll", ir)};
  req.targets = {"sm_90"};
  auto plan = Plan::create(req);
  REQUIRE(plan);
  CompileReport planned = plan->describe();
  REQUIRE_FALSE(planned.jobs.empty());
  for (const JobReport& j : planned.jobs) {
    CHECK(j.status == JobStatus::failed);
    CHECK(j.target == "sm_90");
    CHECK(j.error.find("needs PTX ISA") != std::string::npos);
  }
}
