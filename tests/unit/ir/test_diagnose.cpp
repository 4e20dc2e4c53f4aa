// Unit tests for the first-minute diagnostics (src/ir/diagnose.cpp): inputs
// that are not IR, did-you-mean for entries, the target a unit was built
// for, and which targets a unit may be compiled for.
#include "fixtures/ir.hpp"

#include "ir/diagnose.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/Support/SourceMgr.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

std::unique_ptr<llvm::Module> parse(llvm::LLVMContext& ctx, const std::string& ir) {
  llvm::SMDiagnostic diag;
  auto m = llvm::parseAssemblyString(ir, diag, ctx);
  INFO(diag.getMessage().str());
  REQUIRE(m);
  return m;
}

Error input_error(const std::string& name, const std::string& bytes) {
  Status s = ir::check_input_kind(name, bytes);
  INFO(name);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Code::invalid_argument);
  CHECK(s.error().source == name);
  CHECK(s.error().line == 0);
  return s.error();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string fixture(const std::string& name) {
  auto bytes = read_file(kData + "/" + name);
  REQUIRE(bytes);
  return *bytes;
}

// A 64-byte ELF header (64-bit, little-endian) for machine `machine`.
std::string elf_header(unsigned machine) {
  std::string h(64, '\0');
  h.replace(0, 4, "\x7f"
                  "ELF");
  h[4] = 2;
  h[5] = 1;
  h[18] = char(machine & 0xff);
  h[19] = char(machine >> 8);
  return h;
}

// An AMD unit: one kernel for `cpu` with `features`.
std::string amd_unit(const std::string& cpu, const std::string& features) {
  return "target triple = \"amdgcn-amd-amdhsa\"\n"
         "define amdgpu_kernel void @_Z1kPf(ptr addrspace(1) %p) #0 {\n  ret void\n}\n"
         "attributes #0 = { \"target-cpu\"=\"" + cpu + "\" \"target-features\"=\"" + features +
         "\" }\n";
}

// An NVIDIA unit with one kernel per CPU in `cpus` (no attribute for "").
std::string nv_unit(const std::vector<std::string>& cpus,
                    const std::string& triple = "nvptx64-nvidia-cuda") {
  std::string ir = "target triple = \"" + triple + "\"\n";
  for (size_t i = 0; i < cpus.size(); ++i) {
    ir += "define ptx_kernel void @k" + std::to_string(i) + "() " +
          (cpus[i].empty() ? "" : "#" + std::to_string(i)) + " {\n  ret void\n}\n";
    if (!cpus[i].empty())
      ir += "attributes #" + std::to_string(i) + " = { \"target-cpu\"=\"" + cpus[i] +
            "\" \"target-features\"=\"+ptx88,+" + cpus[i] + "\" }\n";
  }
  return ir;
}

std::string host_unit(const std::string& triple) {
  return "target triple = \"" + triple + "\"\n"
         "define i32 @f(i32 %x) #0 {\n  ret i32 %x\n}\n"
         "attributes #0 = { \"target-cpu\"=\"x86-64\" }\n";
}

const char* kCudaSource = "#include <cstdio>\n\n"
                          "__global__ void vectorAdd(const float* a, const float* b, float* c, "
                          "int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (i < n) c[i] = a[i] + b[i];\n}\n";

} // namespace

TEST_CASE("check_input_kind: source files name their language and the clang-22 command") {
  Error cu = input_error("vector_add.cu", kCudaSource);
  INFO(cu.message);
  CHECK(cu.message ==
        "vector_add.cu is CUDA source, not LLVM IR: Kiln takes LLVM IR (.ll/.bc); compile it "
        "with clang-22 -x cuda --cuda-device-only --cuda-gpu-arch=sm_90 -nocudalib -O2 "
        "-emit-llvm -c vector_add.cu -o vector_add.bc (sm_90 is an example: use your GPU's sm_NN)");

  Error hip = input_error("dir/k.hip", "#include <hip/hip_runtime.h>\n__global__ void k() {}\n");
  INFO(hip.message);
  CHECK(has(hip.message, "dir/k.hip is HIP source"));
  CHECK(has(hip.message, "clang-22 -x hip --cuda-device-only --offload-arch=gfx942 -nogpulib "
                         "-D__AMDGCN_WAVEFRONT_SIZE=64 -O2 -emit-llvm -c dir/k.hip -o dir/k.bc"));

  Error cpp = input_error("main.cpp", "#include <vector>\nint main() { std::vector<int> v; }\n");
  CHECK(has(cpp.message, "main.cpp is C++ source"));
  CHECK(has(cpp.message, "clang++-22 -O2 -emit-llvm -c main.cpp -o main.bc"));

  Error c = input_error("f.c", "int f(int x) { return x + 1; }\n");
  CHECK(has(c.message, "f.c is C source"));
  CHECK(has(c.message, "clang-22 -O2 -emit-llvm -c f.c -o f.bc"));

  // Kernels in a .cpp file are CUDA all the same.
  Error cuda_cpp = input_error("k.cpp", kCudaSource);
  CHECK(has(cuda_cpp.message, "k.cpp is CUDA source"));

  Error header = input_error("k.cuh", "#pragma once\n__device__ float sq(float x);\n");
  CHECK(has(header.message, "k.cuh is a CUDA header"));
  CHECK(has(header.message, "compile the source file that includes it"));

  // By content, whatever the name: the language is given with -x.
  Error named_ll = input_error("kernel.ll", std::string("// kernels\n") + kCudaSource);
  CHECK(has(named_ll.message, "kernel.ll is CUDA source"));
  CHECK(has(named_ll.message, "-x cuda"));
  Error no_ext = input_error("kernels", "/* header\n comment */\ntemplate <class T> T f(T);\n");
  CHECK(has(no_ext.message, "kernels is C++ source"));
  CHECK(has(no_ext.message, "clang++-22 -x c++ -O2"));
}

TEST_CASE("check_input_kind: PTX, ELF objects, fatbins and offload bundles are named") {
  Error ptx = input_error("k.ptx", "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n"
                                   ".version 8.8\n.target sm_80\n.address_size 64\n");
  INFO(ptx.message);
  CHECK(has(ptx.message, "k.ptx is PTX assembly, not LLVM IR"));
  CHECK(has(ptx.message, "--cuda-gpu-arch=sm_80"));

  CHECK(has(input_error("k.cubin", elf_header(190)).message, "is an NVIDIA cubin (ELF)"));
  Error hsaco = input_error("k.hsaco", elf_header(224));
  CHECK(has(hsaco.message, "is an AMD GPU code object (ELF)"));
  CHECK(has(hsaco.message, "--offload-arch=gfx942"));
  CHECK(has(input_error("k.o", elf_header(62)).message, "is a compiled object or library (ELF)"));
  CHECK(has(input_error("k.fatbin", std::string("\x50\xED\x55\xBA\x01\x00\x10\x00", 8)).message,
            "is an NVIDIA fatbin"));
  using namespace std::string_literals;
  Error bundle = input_error("k.bc", "__CLANG_OFFLOAD_BUNDLE__\x02\0\0\0\0\0\0\0"
                                     "hip-amdgcn-amd-amdhsa--gfx90a:xnack+"s);
  INFO(bundle.message);
  CHECK(has(bundle.message, "is a clang offload bundle"));
  CHECK(has(bundle.message, "--offload-arch=gfx90a"));
  CHECK(has(input_error("k.a", "!<arch>\nk.o/").message, "is an archive"));
}

TEST_CASE("check_input_kind: IR, bitcode and what it cannot tell pass to the parser") {
  for (const std::string& ok :
       {ir_parts::kF, std::string("; ModuleID = 'x'\nsource_filename = \"x.cu\"\n"),
        std::string("target triple = \"nvptx64-nvidia-cuda\"\n"), std::string("@g = global i32 0\n"),
        std::string(), std::string("BC\xC0\xDE\x35\x14", 6), std::string("hello, world\n")}) {
    INFO(ok);
    CHECK(ir::check_input_kind("unit.ll", ok));
  }
  // IR is IR whatever its name says.
  CHECK(ir::check_input_kind("oddly_named.cu", ir_parts::kF));
  // Every IR fixture of the project passes.
  for (const char* dir : {"/tests/data", "/examples", "/bench/data"})
    for (const auto& e : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + dir))
      if (e.path().extension() == ".ll") {
        auto bytes = read_file(e.path().string());
        REQUIRE(bytes);
        Status s = ir::check_input_kind(e.path().string(), *bytes);
        CHECK_MESSAGE(s, e.path().string() << ": " << (s ? "" : s.error().message));
      }
}

TEST_CASE("ingest refuses source before the IR parser sees it") {
  llvm::LLVMContext ctx;
  auto r = ir::ingest(ctx, {{"vector_add.cu", kCudaSource, true}});
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().code == Code::invalid_argument);
  CHECK(r.error().source == "vector_add.cu");
  CHECK(has(r.error().message, "is CUDA source"));
  CHECK_FALSE(has(r.error().message, "expected top-level entity"));
}

TEST_CASE("entry_suggestions: a source name finds its mangled function") {
  llvm::LLVMContext ctx;
  auto unit = parse(ctx, fixture("cuda_vector_add_sm90.ll"));
  const std::vector<std::string> expected{"_Z9vectorAddPKfS0_Pfi"};
  CHECK(ir::entry_suggestions(*unit, "vectorAdd") == expected);
  CHECK(ir::entry_suggestions(*unit, "vectoradd") == expected);
  CHECK(ir::entry_suggestions(*unit, "vectorAd") == expected);
  CHECK(ir::entry_suggestions(*unit, "_Z9vectorAddPKfS0_Pfj") == expected);
  CHECK(ir::entry_suggestions(*unit, "matmul").empty());
  CHECK(ir::describe_missing_entry(*unit, "vectorAdd") ==
        "entry 'vectorAdd' is not a function defined in the unit; did you mean "
        "_Z9vectorAddPKfS0_Pfi (vectorAdd(float const*, float const*, float*, int))?");
  std::string none = ir::describe_missing_entry(*unit, "matmul");
  INFO(none);
  CHECK(has(none, "entry 'matmul' is not a function defined in the unit; it defines "
                  "_Z9vectorAddPKfS0_Pfi (vectorAdd("));
}

TEST_CASE("entry_suggestions: exact names first, then case, then close; at most 5") {
  llvm::LLVMContext ctx;
  std::string ir;
  for (const char* f : {"adds", "_Z3ADDf", "_ZN4math3addEii", "ad", "_Z3addii", "sub", "addx",
                        "adder"})
    ir += std::string("define void @") + f + "() {\n  ret void\n}\n";
  ir += "declare void @ext()\n@var = global i32 0\ndefine void @g() {\n  ret void\n}\n";
  auto unit = parse(ctx, ir);
  std::vector<std::string> got = ir::entry_suggestions(*unit, "add");
  REQUIRE(got.size() == 5);
  // add(int, int) and math::add(int, int) by base name, ADD(float) by case,
  // then distance 1 (ad, adds, addx; ties by name).
  CHECK(got[0] == "_Z3addii");
  CHECK(got[1] == "_ZN4math3addEii");
  CHECK(got[2] == "_Z3ADDf");
  CHECK(got[3] == "ad");
  CHECK(got[4] == "adds");
  CHECK(ir::entry_suggestions(*unit, "math::add") == std::vector<std::string>{"_ZN4math3addEii"});
  std::string many = ir::describe_missing_entry(*unit, "add");
  CHECK(has(many, "did you mean one of _Z3addii (add(int, int)), _ZN4math3addEii (math::add(int, "
                  "int)), _Z3ADDf (ADD(float)), ad, adds?"));
  // A one-letter name is not "close" to every other one-letter name.
  CHECK(ir::entry_suggestions(*unit, "f").empty());
  CHECK(has(ir::describe_missing_entry(*unit, "ext"), "only declared"));
  CHECK(has(ir::describe_missing_entry(*unit, "var"), "global variable"));
  CHECK(has(ir::describe_missing_entry(*unit, "zzzzzz"), "and 4 more"));
}

TEST_CASE("target_of_unit: the GPU a unit was built for, as a Kiln spec") {
  llvm::LLVMContext ctx;
  auto spec = [&](const std::string& ir) {
    auto t = ir::target_of_unit(*parse(ctx, ir), "u.ll");
    INFO((t ? *t : t.error().message));
    REQUIRE(t);
    return *t;
  };
  CHECK(spec(ir_parts::kF) == "");
  CHECK(spec(fixture("cuda_vector_add_sm90.ll")) == "sm_90");
  CHECK(spec(nv_unit({"sm_90a", ""})) == "sm_90a");
  CHECK(spec(host_unit("x86_64-unknown-linux-gnu")) == "");
  CHECK(spec(host_unit("aarch64-unknown-linux-gnu")) == "");
  CHECK(spec(amd_unit("gfx942", "+wavefrontsize64")) == "gfx942");
  CHECK(spec(amd_unit("gfx942", "+wavefrontsize64,-xnack")) == "gfx942:xnack-");
  CHECK(spec(amd_unit("gfx942", "-xnack,+sramecc,+wavefrontsize64")) == "gfx942:sramecc+:xnack-");
  CHECK(spec(amd_unit("gfx1100", "+wavefrontsize32")) == "gfx1100");

  auto error = [&](const std::string& ir) {
    auto t = ir::target_of_unit(*parse(ctx, ir), "u.ll");
    REQUIRE_FALSE(t);
    CHECK(t.error().code == Code::invalid_argument);
    CHECK(t.error().source == "u.ll");
    return t.error().message;
  };
  CHECK(has(error(nv_unit({""})), "--target sm_NN"));
  std::string two = error(nv_unit({"sm_80", "sm_90"}));
  INFO(two);
  CHECK(has(two, "k0 says target-cpu=sm_80"));
  CHECK(has(two, "k1 says target-cpu=sm_90"));
  std::string mixed = amd_unit("gfx942", "+xnack") +
                      "define void @h() #1 {\n  ret void\n}\n"
                      "attributes #1 = { \"target-cpu\"=\"gfx942\" \"target-features\"=\"-xnack\" }\n";
  CHECK(has(error(mixed), "disagrees on xnack"));
}

TEST_CASE("check_unit_for_target: target-neutral IR goes anywhere; IR with a triple only there") {
  llvm::LLVMContext ctx;
  core::TargetDesc host = resolved("host"), sm90 = resolved("sm_90"), gfx942 = resolved("gfx942");
  auto warnings = [&](const std::string& ir, const core::TargetDesc& t) {
    auto r = ir::check_unit_for_target(*parse(ctx, ir), t, "kernels.ll");
    INFO(t.spec << ": " << (r ? "" : r.error().message));
    REQUIRE(r);
    return *r;
  };
  auto refusal = [&](const std::string& ir, const core::TargetDesc& t) {
    auto r = ir::check_unit_for_target(*parse(ctx, ir), t, "kernels.ll");
    INFO(t.spec);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Code::invalid_argument);
    CHECK(r.error().target == t.spec);
    CHECK(r.error().source == "kernels.ll");
    return r.error().message;
  };
  for (const core::TargetDesc& t : {host, sm90, gfx942})
    CHECK(warnings(ir_parts::kF, t).empty());

  const std::string cuda = fixture("cuda_vector_add_sm90.ll");
  CHECK(warnings(cuda, sm90).empty());
  CHECK(warnings(cuda, resolved("sm_90a")).empty());
  std::vector<std::string> older = warnings(cuda, resolved("sm_80"));
  REQUIRE(older.size() == 1);
  CHECK(has(older[0], "kernels.ll's IR was built for sm_90 (its functions say target-cpu=sm_90"));
  CHECK(has(older[0], "precompiling it for sm_80 may miscompile or fail: build the IR for sm_80"));

  std::string to_host = refusal(cuda, host);
  INFO(to_host);
  CHECK(has(to_host, "kernels.ll's IR is for nvptx64-nvidia-cuda (NVIDIA GPU code), not the host"));
  CHECK(has(to_host, "precompile it with --target sm_90"));
  CHECK(has(refusal(cuda, gfx942), "not AMD gfx942: precompile it with --target sm_90, or compile "
                                   "the device side with clang-22 -x hip"));

  std::string x86 = host_unit("x86_64-unknown-linux-gnu");
  std::string to_gpu = refusal(x86, sm90);
  INFO(to_gpu);
  CHECK(has(to_gpu, "kernels.ll's IR is for x86_64-unknown-linux-gnu (host code), not NVIDIA "
                    "sm_90: compile the device side with clang-22 -x cuda --cuda-device-only "
                    "--cuda-gpu-arch=sm_90 -nocudalib -O2 -emit-llvm -c kernels.cu -o kernels.bc"));
  CHECK(has(refusal(x86, gfx942), "--offload-arch=gfx942"));

  // Host IR for this machine's architecture and OS is fine; another's is not.
  CHECK(warnings(host_unit(host.triple), host).empty());
  llvm::Triple here(host.triple);
  std::string foreign = here.isX86() ? "aarch64-unknown-linux-gnu" : "x86_64-unknown-linux-gnu";
  CHECK(has(refusal(host_unit(foreign), host), "whose triple is " + host.triple));
  std::string other_os = std::string(here.getArchName()) + "-apple-macosx14.0.0";
  CHECK(has(refusal(host_unit(other_os), host), "not the host"));

  CHECK(has(refusal(nv_unit({"sm_90"}, "nvptx-nvidia-cuda"), sm90), "32-bit NVIDIA GPU code"));
  CHECK(has(refusal("target triple = \"spirv64-unknown-unknown\"\n" + ir_parts::kF, sm90),
            "code Kiln does not compile"));
}

TEST_CASE("check_unit_for_target: AMD IR for another gfx, xnack or wavefront size warns") {
  llvm::LLVMContext ctx;
  auto warnings = [&](const std::string& ir, const std::string& spec) {
    auto r = ir::check_unit_for_target(*parse(ctx, ir), resolved(spec));
    INFO(spec << ": " << (r ? "" : r.error().message));
    REQUIRE(r);
    return *r;
  };
  const std::string gfx942 = amd_unit("gfx942", "+sramecc,+wavefrontsize64,-xnack");
  CHECK(warnings(gfx942, "gfx942").empty());
  CHECK(warnings(gfx942, "gfx942:sramecc+:xnack-").empty());
  std::vector<std::string> xnack = warnings(gfx942, "gfx942:xnack+");
  REQUIRE(xnack.size() == 1);
  CHECK(has(xnack[0], "the unit's IR was built with -xnack"));
  std::vector<std::string> rdna = warnings(gfx942, "gfx1100");
  REQUIRE(rdna.size() == 2);
  CHECK(has(rdna[0], "built for gfx942"));
  CHECK(has(rdna[1], "built for wave64"));
  CHECK(has(rdna[1], "gfx1100 code is wave32"));
  // wave64 IR for a wave32 GPU of the same name.
  std::vector<std::string> wave = warnings(amd_unit("gfx1100", "+wavefrontsize64"), "gfx1100");
  REQUIRE(wave.size() == 1);
  CHECK(has(wave[0], "without -mwavefrontsize64"));
  CHECK(warnings(amd_unit("gfx1100", "+wavefrontsize32"), "gfx1100").empty());
  CHECK(warnings(amd_unit("gfx90a", "+wavefrontsize64"), "gfx90a").empty());
}
