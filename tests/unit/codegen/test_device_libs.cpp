// Unit tests for the device math libraries (src/codegen/device_libs.cpp):
// which library a job's callees need, fingerprints that follow the library's
// bytes and nothing else, libdevice and the ROCm device libraries found (or a
// clear error), and linking them into a job with the AMD control constants.
#include "codegen/device_libs.h"
#include "codegen/ptxas.h"
#include "fixtures/jobs.hpp"
#include "fixtures/process.hpp"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/Support/raw_ostream.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

using namespace kiln;
using namespace kiln::test;

namespace {

// "; <library> <16 hex>": the fingerprint of a library that is installed.
bool is_fingerprint_of(const std::string& fp, const std::string& library) {
  std::string prefix = "; " + library + " ";
  if (fp.size() != prefix.size() + 16 || fp.rfind(prefix, 0) != 0)
    return false;
  for (size_t i = prefix.size(); i < fp.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(fp[i])))
      return false;
  return true;
}

// libdevice's fingerprint here, or "" (with the error checked) if it is not
// installed.
std::string libdevice_fingerprint() {
  auto fp = codegen::device_libs_fingerprint(resolved("sm_90"), {"__nv_sinf"});
  if (!fp) {
    INFO(fp.error().message);
    CHECK(fp.error().code == Code::unavailable);
    CHECK(fp.error().message.rfind("libdevice is not installed (looked in $KILN_LIBDEVICE", 0) ==
          0);
    MESSAGE("skipped: " << fp.error().message);
    return {};
  }
  return *fp;
}

std::string read_path(const std::string& path) {
  auto bytes = read_file(path);
  REQUIRE(bytes);
  return bytes.take();
}

// What the "libdevice-fingerprint" child printed.
std::string printed_fingerprint(const ProcessResult& r) {
  check_child(r);
  const std::string tag = "fingerprint=";
  size_t at = r.output.find(tag);
  REQUIRE(at != std::string::npos);
  size_t end = r.output.find('\n', at);
  return r.output.substr(at + tag.size(), end - at - tag.size());
}

// A job reading one of the AMD control constants and calling ocml.
constexpr const char* kReadsIsa = R"(
@__oclc_ISA_version = external addrspace(4) constant i32
@__oclc_wavefrontsize64 = external addrspace(4) constant i8
declare float @__ocml_sin_f32(float)

define float @wave(float %x) {
  %isa = load i32, ptr addrspace(4) @__oclc_ISA_version
  %w = load i8, ptr addrspace(4) @__oclc_wavefrontsize64
  %s = call float @__ocml_sin_f32(float %x)
  %i = sitofp i32 %isa to float
  %wf = sitofp i8 %w to float
  %a = fadd float %s, %i
  %r = fadd float %a, %wf
  ret float %r
}
)";

// A module as text and as bitcode: equal for equal modules.
std::pair<std::string, std::string> module_bytes(const llvm::Module& m) {
  std::string text, bc;
  llvm::raw_string_ostream ts(text), bs(bc);
  m.print(ts, nullptr);
  llvm::WriteBitcodeToFile(m, bs);
  return {text, bc};
}

int64_t control_value(const llvm::Module& m, const char* name) {
  const llvm::GlobalVariable* gv = m.getGlobalVariable(name, /*AllowInternal=*/true);
  INFO(name);
  REQUIRE(gv);
  REQUIRE(gv->hasInitializer());
  CHECK(gv->isConstant());
  CHECK(gv->hasInternalLinkage());
  auto* c = llvm::dyn_cast<llvm::ConstantInt>(gv->getInitializer());
  REQUIRE(c);
  return c->getSExtValue();
}

} // namespace

TEST_CASE("device libs: a job's callees decide which library it needs") {
  core::TargetDesc host = resolved("host"), nv = resolved("sm_90"), amd = resolved("gfx942");
  // No library: nothing device-side, or the other vendor's names.
  for (const auto& [t, callees] :
       std::vector<std::pair<core::TargetDesc, std::vector<std::string>>>{
           {host, {"__nv_sinf", "__ocml_sin_f32", "__ockl_get_local_id"}},
           {nv, {}},
           {nv, {"malloc", "__ocml_sin_f32", "__ockl_get_local_id", "nv_sinf"}},
           {amd, {"__nv_sinf", "printf"}},
       }) {
    CAPTURE(t.spec);
    auto fp = codegen::device_libs_fingerprint(t, callees);
    REQUIRE(fp);
    CHECK(*fp == "");
  }

  // The callees extraction reports: the deferred child calls the library,
  // its kernel parent does not.
  std::string math = data_file("gpu_math.ll");
  ir::ExtractedJob child = extract_for(math, "nv_wave", nv);
  CHECK(child.callees == std::vector<std::string>{"__nv_sinf"});
  ir::ExtractedJob parent = extract_for(math, "k_nv", nv);
  CHECK(parent.callees.empty());
  auto none = codegen::device_libs_fingerprint(nv, parent.callees);
  REQUIRE(none);
  CHECK(*none == "");
  std::string lib = libdevice_fingerprint();
  if (!lib.empty()) {
    auto fp = codegen::device_libs_fingerprint(nv, child.callees);
    REQUIRE(fp);
    CHECK(is_fingerprint_of(*fp, "libdevice"));
  }

  ir::ExtractedJob amd_child = extract_for(math, "amd_wave", amd);
  CHECK(amd_child.callees == std::vector<std::string>{"__ocml_sin_f32"});
  auto amd_fp = codegen::device_libs_fingerprint(amd, amd_child.callees);
  INFO((amd_fp ? std::string() : amd_fp.error().message));
  REQUIRE(amd_fp);
  CHECK(is_fingerprint_of(*amd_fp, "rocm-device-libs"));
}

TEST_CASE("device libs: fingerprints are stable and name the library") {
  core::TargetDesc amd = resolved("gfx942"), amd90a = resolved("gfx90a");
  auto a = codegen::device_libs_fingerprint(amd, {"__ocml_sin_f32"});
  auto b = codegen::device_libs_fingerprint(amd, {"printf", "__ockl_get_local_id"});
  auto c = codegen::device_libs_fingerprint(amd90a, {"__ocml_cos_f64"});
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  // One library, whichever of its functions and whichever AMD target.
  CHECK(*a == *b);
  CHECK(*a == *c);

  std::string lib = libdevice_fingerprint();
  if (lib.empty())
    return;
  CHECK(is_fingerprint_of(lib, "libdevice"));
  auto again = codegen::device_libs_fingerprint(resolved("sm_80"), {"__nv_cosf", "printf"});
  REQUIRE(again);
  CHECK(*again == lib);
  CHECK(lib.substr(lib.size() - 16) != a->substr(a->size() - 16));
}

TEST_CASE("device libs: the libdevice fingerprint follows its bytes and not its path") {
  if (child_role() == "libdevice-fingerprint") {
    child_ran();
    auto fp = codegen::device_libs_fingerprint(resolved("sm_90"), {"__nv_sinf"});
    INFO((fp ? std::string() : fp.error().message));
    REQUIRE(fp);
    std::printf("fingerprint=%s\n", fp->c_str());
    std::fflush(stdout);
    return;
  }
  std::string lib = libdevice_fingerprint();
  if (lib.empty())
    return;
  std::vector<std::string> files = codegen::toolchain_files(resolved("sm_90"));
  REQUIRE_FALSE(files.empty());
  std::string original = files.back(); // ptxas, if present, comes first
  REQUIRE(original.find("libdevice") != std::string::npos);
  TempDir dir = temp_dir("kiln-libdevice-test");
  std::string same = dir.path() + "/same.bc", changed = dir.path() + "/changed.bc";
  std::string bytes = read_path(original);
  REQUIRE(write_file_atomic(same, bytes));
  REQUIRE(write_file_atomic(changed, bytes + std::string(4, '\0')));

  const char* name = "device libs: the libdevice fingerprint follows its bytes and not its path";
  std::string at_same = printed_fingerprint(
      run_child(name, "libdevice-fingerprint", {"KILN_LIBDEVICE=" + same}));
  std::string at_changed = printed_fingerprint(
      run_child(name, "libdevice-fingerprint", {"KILN_LIBDEVICE=" + changed}));
  CHECK(at_same == lib);
  CHECK(is_fingerprint_of(at_changed, "libdevice"));
  CHECK(at_changed != lib);
}

TEST_CASE("device libs: the files each target's code depends on") {
  CHECK(codegen::toolchain_files(resolved("host")).empty());

  std::vector<std::string> amd = codegen::toolchain_files(resolved("gfx942"));
  // hip.bc where the release has one (the fence __syncthreads needs), then
  // ocml and ockl.
  REQUIRE(amd.size() >= 2);
  REQUIRE(amd.size() <= 3);
  auto ends = [](const std::string& f, const std::string& tail) {
    return f.size() > tail.size() && f.substr(f.size() - tail.size()) == tail;
  };
  if (amd.size() == 3)
    CHECK(ends(amd[0], "/hip.bc"));
  CHECK(ends(amd[amd.size() - 2], "/ocml.bc"));
  CHECK(ends(amd.back(), "/ockl.bc"));
  for (const std::string& f : amd)
    CHECK_MESSAGE(::access(f.c_str(), R_OK) == 0, f);

  std::vector<std::string> nv = codegen::toolchain_files(resolved("sm_90"));
  std::vector<std::string> expected;
  if (codegen::ptx_assembler() == codegen::PtxAssembler::program)
    expected.push_back(codegen::ptxas_path());
  if (!libdevice_fingerprint().empty()) {
    REQUIRE_FALSE(nv.empty());
    CHECK(nv.back().size() > 15);
    CHECK(nv.back().substr(nv.back().size() - 15) == "libdevice.10.bc");
    expected.push_back(nv.back());
  }
  CHECK(nv == expected);
}

TEST_CASE("device libs: linking libdevice defines what the job calls") {
  if (libdevice_fingerprint().empty())
    return;
  core::TargetDesc nv = resolved("sm_90");
  ir::ExtractedJob job = extract_for(data_file("gpu_math.ll"), "nv_wave", nv);
  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, job.bitcode);
  REQUIRE(m->getFunction("__nv_sinf"));
  CHECK(m->getFunction("__nv_sinf")->isDeclaration());
  size_t before = m->size();
  Status s = codegen::link_device_libs(*m, nv);
  INFO((s ? std::string() : s.error().message));
  REQUIRE(s);
  REQUIRE(m->getFunction("__nv_sinf"));
  CHECK_FALSE(m->getFunction("__nv_sinf")->isDeclaration());
  // Only what the job needs: a few functions, not the whole library.
  CHECK(m->size() > before);
  CHECK(m->size() < 40);
  CHECK(m->getTargetTriple().str() == nv.triple);
}

TEST_CASE("device libs: linking the ROCm libraries defines ocml and the control constants") {
  for (const auto& [spec, isa, wave64] :
       std::vector<std::tuple<std::string, int, int>>{
           {"gfx942", 9402, 1}, {"gfx90a", 9010, 1}, {"gfx1030", 10300, 0}}) {
    CAPTURE(spec);
    core::TargetDesc amd = resolved(spec);
    ir::ExtractedJob job = extract_for(kReadsIsa, "wave", amd);
    llvm::LLVMContext ctx;
    auto m = parse_bitcode(ctx, job.bitcode);
    Status s = codegen::link_device_libs(*m, amd);
    INFO((s ? std::string() : s.error().message));
    REQUIRE(s);
    REQUIRE(m->getFunction("__ocml_sin_f32"));
    CHECK_FALSE(m->getFunction("__ocml_sin_f32")->isDeclaration());
    CHECK(control_value(*m, "__oclc_ISA_version") == isa);
    CHECK(control_value(*m, "__oclc_wavefrontsize64") == wave64);
    // Whatever other controls the library reads are defined too.
    for (const llvm::GlobalVariable& gv : m->globals())
      if (gv.getName().starts_with("__oclc_"))
        CHECK_MESSAGE(gv.hasInitializer(), gv.getName().str());
  }
}

TEST_CASE("device libs: a job that needs no library is left as it is") {
  // The kernels defer to the callers of the library; the host and the other
  // vendor have none, so their __nv_sinf stays open.
  for (const auto& [spec, entry] : std::vector<std::pair<std::string, std::string>>{
           {"host", "nv_wave"}, {"sm_90", "k_nv"}, {"gfx942", "k_amd"}, {"gfx942", "nv_wave"}}) {
    CAPTURE(spec);
    CAPTURE(entry);
    core::TargetDesc t = resolved(spec);
    ir::ExtractedJob job = extract_for(data_file("gpu_math.ll"), entry, t);
    llvm::LLVMContext ctx;
    auto m = parse_bitcode(ctx, job.bitcode);
    size_t functions = m->size(), globals = m->global_size();
    REQUIRE(codegen::link_device_libs(*m, t));
    CHECK(m->size() == functions);
    CHECK(m->global_size() == globals);
    if (entry == "nv_wave") {
      REQUIRE(m->getFunction("__nv_sinf"));
      CHECK(m->getFunction("__nv_sinf")->isDeclaration());
    }
  }
}

TEST_CASE("device libs: lazy linking gives the module a whole parse gives") {
  // libdevice (when installed) and the ROCm libraries, for jobs calling one
  // function, several, and reading the AMD controls.
  constexpr const char* kSeveral = R"(
declare float @__nv_sinf(float)
declare float @__nv_expf(float)
declare double @__nv_pow(double, double)
declare float @__ocml_sin_f32(float)
declare double @__ocml_pow_f64(double, double)
declare i64 @__ockl_get_local_id(i32)

define float @nv_many(float %x, double %y) {
  %s = call float @__nv_sinf(float %x)
  %e = call float @__nv_expf(float %s)
  %p = call double @__nv_pow(double %y, double %y)
  %f = fptrunc double %p to float
  %r = fadd float %e, %f
  ret float %r
}

define float @amd_many(float %x, double %y) {
  %s = call float @__ocml_sin_f32(float %x)
  %p = call double @__ocml_pow_f64(double %y, double %y)
  %i = call i64 @__ockl_get_local_id(i32 0)
  %f = fptrunc double %p to float
  %fi = sitofp i64 %i to float
  %a = fadd float %s, %f
  %r = fadd float %a, %fi
  ret float %r
}
)";
  bool nv = !libdevice_fingerprint().empty();
  std::string math = data_file("gpu_math.ll");
  for (const auto& [spec, ir, entry] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"sm_90", math, "nv_wave"},
           {"sm_80", kSeveral, "nv_many"},
           {"gfx942", math, "amd_wave"},
           {"gfx1030", kSeveral, "amd_many"},
           {"gfx90a", kReadsIsa, "wave"}}) {
    if (spec.rfind("sm_", 0) == 0 && !nv)
      continue;
    CAPTURE(spec);
    CAPTURE(entry);
    core::TargetDesc t = resolved(spec);
    ir::ExtractedJob job = extract_for(ir, entry, t);
    llvm::LLVMContext lazy_ctx, eager_ctx;
    auto lazy = parse_bitcode(lazy_ctx, job.bitcode);
    auto eager = parse_bitcode(eager_ctx, job.bitcode);
    size_t before = lazy->size();
    Status ls = codegen::link_device_libs(*lazy, t);
    INFO((ls ? std::string() : ls.error().message));
    REQUIRE(ls);
    REQUIRE(codegen::link_device_libs(*eager, t, codegen::LibraryLoading::eager));
    CHECK(lazy->size() > before);
    for (const llvm::Function& f : *lazy)
      if (f.getName().starts_with("__nv_") || f.getName().starts_with("__ocml_"))
        CHECK_MESSAGE(!f.isDeclaration(), f.getName().str());
    auto [lazy_text, lazy_bc] = module_bytes(*lazy);
    auto [eager_text, eager_bc] = module_bytes(*eager);
    CHECK(lazy_text == eager_text);
    CHECK(lazy_bc == eager_bc);
  }
}
