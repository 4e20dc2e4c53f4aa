// Unit tests for compiling one job (src/codegen/compile.cpp): what each kind
// of target gets (a host object, PTX and a cubin, finished AMD bitcode), that
// finishing names the job by its deferred symbol, that optimization and
// debug info change the code as asked, and that failures name the job.
#include "codegen/ptxas.h"
#include "fixtures/jobs.hpp"
#include "support/elf.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

uint16_t host_machine() {
#if defined(__x86_64__)
  return kElfMachineX86_64;
#elif defined(__aarch64__)
  return kElfMachineAArch64;
#else
#error "no ELF machine known for this host"
#endif
}

std::vector<codegen::CompiledArtifact> must_compile(const codegen::JobInput& job,
                                                    const core::TargetDesc& t,
                                                    const core::CodegenOptions& options = {}) {
  auto r = codegen::compile_job(job, t, options);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  return r.take();
}

std::set<std::string> formats_of(const std::vector<codegen::CompiledArtifact>& arts) {
  std::set<std::string> out;
  for (const codegen::CompiledArtifact& a : arts)
    out.insert(a.format);
  return out;
}

std::set<std::string> formats_of(const core::TargetDesc& t) {
  std::vector<std::string> f = codegen::artifact_formats(t);
  return {f.begin(), f.end()};
}

const std::string& artifact(const std::vector<codegen::CompiledArtifact>& arts,
                            const std::string& format) {
  for (const codegen::CompiledArtifact& a : arts)
    if (a.format == format)
      return a.bytes;
  FAIL("no artifact of format " << format);
  static const std::string none;
  return none;
}

// The defined and undefined symbols of an ELF file.
struct Symbols {
  std::set<std::string> defined, undefined, functions;
};

Symbols symbols_of(const ElfInfo& elf) {
  Symbols s;
  for (const ElfSymbol& sym : elf.symbols) {
    if (sym.name.empty())
      continue;
    (sym.defined ? s.defined : s.undefined).insert(sym.name);
    if (sym.defined && sym.function)
      s.functions.insert(sym.name);
  }
  return s;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE("compile_job: host gives a relocatable object for this machine defining the job") {
  core::TargetDesc t = host();
  codegen::JobInput job = job_for(kDeferred, "parent", t, {});
  REQUIRE(job.renames.size() == 1);
  std::string child = core::deferred_symbol({"child", t, {}});
  CHECK(job.renames[0].second == child);

  auto arts = must_compile(job, t);
  CHECK(formats_of(arts) == formats_of(t));
  CHECK(formats_of(arts) == std::set<std::string>{"obj"});
  auto elf = read_elf(artifact(arts, "obj"));
  REQUIRE(elf);
  CHECK(elf->type == 1); // ET_REL
  CHECK(elf->machine == host_machine());
  Symbols s = symbols_of(*elf);
  CHECK(s.functions.count(job.symbol) == 1);
  // The child is called by its deferred symbol, left for the linker; neither
  // the entry's own name nor the placeholder survives finishing.
  CHECK(s.undefined.count(child) == 1);
  CHECK(s.defined.count("parent") == 0);
  CHECK(s.undefined.count(job.renames[0].first) == 0);
  CHECK(s.defined.count(job.renames[0].first) == 0);

  // A leaf job refers to nothing.
  codegen::JobInput leaf = job_for(kDeferred, "child", t, {});
  CHECK(leaf.symbol == child);
  auto leaf_elf = read_elf(artifact(must_compile(leaf, t), "obj"));
  REQUIRE(leaf_elf);
  Symbols ls = symbols_of(*leaf_elf);
  CHECK(ls.functions.count(child) == 1);
  CHECK(ls.undefined.empty());
}

TEST_CASE("compile_job: sm_90 gives PTX naming the job, and a cubin where ptxas is found") {
  core::TargetDesc t = resolved("sm_90");
  codegen::JobInput job = job_for(data_file("gpu_nvptx.ll"), "k_nested", t, {});
  REQUIRE(job.renames.size() == 1);
  std::string mid = job.renames[0].second;
  auto arts = must_compile(job, t);
  CHECK(formats_of(arts) == formats_of(t));

  const std::string& ptx = artifact(arts, "ptx");
  INFO(ptx);
  CHECK(contains(ptx, ".target sm_90"));
  CHECK(contains(ptx, ".address_size 64"));
  CHECK(contains(ptx, ".visible .entry " + job.symbol + "(")); // still a kernel
  CHECK(contains(ptx, ".extern .func"));
  // The child is declared and called by its deferred symbol.
  CHECK(contains(ptx, "(.param .b32 func_retval0) " + mid + "\n"));
  CHECK(contains(ptx, "call.uni (retval0), " + mid + ", "));
  CHECK_FALSE(contains(ptx, "k_nested"));
  CHECK_FALSE(contains(ptx, job.renames[0].first));

  if (codegen::ptx_assembler() == codegen::PtxAssembler::none ||
      codegen::ptx_assembler() == codegen::PtxAssembler::link) {
    // PTX alone: nvJitLink assembles it at the image link (or nothing can).
    CHECK(formats_of(arts) == std::set<std::string>{"ptx"});
    MESSAGE("skipped the cubin: no ptxas assembles per job (KILN_PTXAS=<ptxas> runs it)");
    return;
  }
  CHECK(formats_of(arts) == std::set<std::string>{"ptx", "cubin"});
  auto elf = read_elf(artifact(arts, "cubin"));
  REQUIRE(elf);
  CHECK(elf->machine == kElfMachineCuda);
  CHECK(elf->type == 1); // relocatable: nvJitLink links the closure
  Symbols s = symbols_of(*elf);
  CHECK(s.defined.count(job.symbol) == 1);
  CHECK(s.undefined.count(mid) == 1);
}

TEST_CASE("compile_job: gfx942 gives finished bitcode") {
  core::TargetDesc t = resolved("gfx942");
  codegen::JobInput job = job_for(data_file("gpu_amdgpu.ll"), "d_fact", t, {});
  auto arts = must_compile(job, t);
  CHECK(formats_of(arts) == formats_of(t));
  CHECK(formats_of(arts) == std::set<std::string>{"bc"});
  const std::string& bc = artifact(arts, "bc");
  REQUIRE(bc.size() > 4);
  CHECK(bc.compare(0, 4, "BC\xC0\xDE") == 0);

  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, bc);
  CHECK(m->getTargetTriple().str() == "amdgcn-amd-amdhsa");
  llvm::Function* f = m->getFunction(job.symbol);
  REQUIRE(f);
  CHECK_FALSE(f->isDeclaration());
  CHECK(f->hasExternalLinkage());
  // A device function's job: hidden, so other jobs call it PC-relative in
  // the shared object an AMD image is.
  CHECK(f->getVisibility() == llvm::GlobalValue::HiddenVisibility);
  CHECK(m->getFunction("d_fact") == nullptr);
  // The unit's mutable global: one per image, merged by the linker, and
  // protected, so hipModuleGetGlobal finds it by name.
  llvm::GlobalVariable* calls = m->getGlobalVariable("calls", /*AllowInternal=*/true);
  REQUIRE(calls);
  CHECK(calls->getLinkage() == llvm::GlobalValue::WeakODRLinkage);
  CHECK(calls->getVisibility() == llvm::GlobalValue::ProtectedVisibility);

  // A kernel written for NVIDIA gets AMD's kernel convention.
  codegen::JobInput nv_kernel = job_for(data_file("gpu_nvptx.ll"), "k_nested", t, {});
  auto nv_arts = must_compile(nv_kernel, t);
  auto nm = parse_bitcode(ctx, artifact(nv_arts, "bc"));
  llvm::Function* k = nm->getFunction(nv_kernel.symbol);
  REQUIRE(k);
  CHECK(k->getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL);
  CHECK(k->getVisibility() == llvm::GlobalValue::ProtectedVisibility);
}

TEST_CASE("compile_job: -O0 and -O2 give different code, each the same every time") {
  core::CodegenOptions o0, o2;
  o0.opt_level = 0;
  o2.opt_level = 2;
  for (const char* spec : {"host", "sm_90", "gfx942"}) {
    CAPTURE(spec);
    core::TargetDesc t = resolved(spec);
    std::string format = codegen::artifact_formats(t).front();
    // k calls an internal helper that -O2 inlines.
    auto at = [&](const core::CodegenOptions& o) {
      return artifact(must_compile(job_for(kWithOthers, "k", t, o), t, o), format);
    };
    std::string a0 = at(o0), a2 = at(o2);
    CHECK(a0 != a2);
    CHECK(at(o0) == a0);
    CHECK(at(o2) == a2);
  }
  // The inlined helper is gone from the optimized host object.
  core::TargetDesc t = host();
  auto symbols_at = [&](const core::CodegenOptions& o) {
    auto elf = read_elf(artifact(must_compile(job_for(kWithOthers, "k", t, o), t, o), "obj"));
    REQUIRE(elf);
    return symbols_of(*elf);
  };
  CHECK(symbols_at(o0).functions.count("h") == 1);
  CHECK(symbols_at(o2).functions.count("h") == 0);
}

TEST_CASE("compile_job: debug info is kept only with -g") {
  core::CodegenOptions plain, dbg;
  dbg.debug = true;
  core::TargetDesc t = host();
  std::string with = artifact(must_compile(job_for(kWithDebug, "f", t, dbg), t, dbg), "obj");
  std::string without =
      artifact(must_compile(job_for(kWithDebug, "f", t, plain), t, plain), "obj");
  CHECK(contains(with, ".debug_info"));
  CHECK(contains(with, ".debug_line"));
  CHECK(contains(with, "f.c"));
  CHECK_FALSE(contains(without, ".debug_info"));
  CHECK_FALSE(contains(without, ".debug_line"));
  CHECK_FALSE(contains(without, "f.c"));

  core::TargetDesc nv = resolved("sm_90");
  std::string ptx_with =
      artifact(must_compile(job_for(kWithDebug, "f", nv, dbg), nv, dbg), "ptx");
  std::string ptx_without =
      artifact(must_compile(job_for(kWithDebug, "f", nv, plain), nv, plain), "ptx");
  CHECK(contains(ptx_with, ".loc"));
  CHECK(contains(ptx_with, "f.c"));
  CHECK_FALSE(contains(ptx_without, ".loc"));
  CHECK_FALSE(contains(ptx_without, "f.c"));
}

TEST_CASE("codegen errors: a job that fails to compile names its entry and target") {
  core::TargetDesc t = host();
  codegen::JobInput job{"fib", "kiln_fib_symbol", "this is not bitcode", {}};
  auto r = codegen::compile_job(job, t, core::CodegenOptions{});
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().entry == "fib");
  CHECK(r.error().target == "host");
  CHECK(r.error().message.find("job 'fib' (host)") != std::string::npos);
}

TEST_CASE("compile_job: a module without its entry is an internal error naming the job") {
  core::TargetDesc t = resolved("sm_90");
  codegen::JobInput job = job_for(kBase, "f", t, {});
  job.entry = "g";
  auto r = codegen::compile_job(job, t, {});
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().code == Code::internal);
  CHECK(r.error().entry == "g");
  CHECK(r.error().target == "sm_90");
  CHECK(r.error().message.find("lacks its entry 'g'") != std::string::npos);
}

TEST_CASE("compile_job: host inline assembly is assembled") {
  const std::string ir = R"(
define i32 @with_asm(i32 %x) {
  call void asm sideeffect "nop", ""()
  %r = add i32 %x, 1
  ret i32 %r
}
)";
  core::TargetDesc t = host();
  codegen::JobInput job = job_for(ir, "with_asm", t, {});
  auto elf = read_elf(artifact(must_compile(job, t), "obj"));
  REQUIRE(elf);
  CHECK(symbols_of(*elf).functions.count(job.symbol) == 1);
}

TEST_CASE("compile_job: code the backend rejects is an error naming the job, not an exit") {
  const std::string ir = R"(
define void @bad_asm() {
  call void asm sideeffect "this_is_no_instruction", ""()
  ret void
}
)";
  core::TargetDesc t = host();
  codegen::JobInput job = job_for(ir, "bad_asm", t, {});
  auto r = codegen::compile_job(job, t, {});
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().code == Code::invalid_argument);
  CHECK(r.error().entry == "bad_asm");
  CHECK(r.error().target == "host");
  CHECK(r.error().message.rfind("job 'bad_asm' (host): code generation failed: ", 0) == 0);
  CHECK(r.error().message.find("this_is_no_instruction") != std::string::npos);
}

TEST_CASE("compile_job: a thread's kept backend gives each job the bytes a new one does") {
  // Each thread keeps its target machine and codegen pipeline and runs them
  // job after job; what it compiled before, a failed job included, must not
  // show in the next job's file.
  const std::string bad = R"(
define void @bad_asm() {
  call void asm sideeffect "this_is_no_instruction", ""()
  ret void
}
)";
  core::CodegenOptions plain, dbg, o0;
  dbg.debug = true;
  o0.opt_level = 0;
  for (const char* spec : {"host", "sm_90", "gfx942"}) {
    CAPTURE(spec);
    core::TargetDesc t = resolved(spec);
    std::string format = codegen::artifact_formats(t).back();
    struct Case {
      codegen::JobInput job;
      core::CodegenOptions options;
    };
    std::vector<Case> cases = {{job_for(kWithOthers, "k", t, plain), plain},
                               {job_for(kBase, "f", t, plain), plain},
                               {job_for(kWithDebug, "f", t, dbg), dbg},
                               {job_for(kWithOthers, "k", t, o0), o0}, // a call, not inlined
                               {job_for(kWithOthers, "k", t, plain), plain},
                               {job_for(kWithOthers, "k", t, o0), o0}};
    auto compile = [&](const Case& c) {
      return artifact(must_compile(c.job, t, c.options), format);
    };
    std::vector<std::string> alone;
    for (const Case& c : cases) {
      std::optional<std::string> bytes;
      std::thread([&] { bytes = compile(c); }).join();
      REQUIRE(bytes);
      alone.push_back(*bytes);
    }
    // One after another on this thread, then each after a failed job (on
    // the host, the one target that assembles inline assembly per job).
    for (size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(i);
      CHECK(compile(cases[i]) == alone[i]);
    }
    if (t.kind != core::TargetKind::host)
      continue;
    codegen::JobInput failing = job_for(bad, "bad_asm", t, {});
    for (size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(i);
      REQUIRE_FALSE(codegen::compile_job(failing, t, {}));
      CHECK(compile(cases[i]) == alone[i]);
    }
  }
}
