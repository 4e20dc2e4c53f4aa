// Unit tests for AMDGPU images (src/link/lld/amdgpu_link.cpp, through
// link::link_amdgpu_image): a closure's finished bitcode linked at IR level,
// compiled once for the device and made an HSACO by lld, and the errors of
// inputs that cannot be linked.
#include "fixtures/cache.hpp"
#include "fixtures/ir.hpp"
#include "link/plugin.h"
#include "support/fault.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace kiln;
using namespace kiln::test;

TEST_CASE("AMDGPU link: a closure's bitcode becomes an HSACO defining every member") {
  core::TargetDesc t = resolved("gfx942");
  // The kernel and its members: nested, self-recursive, a three-cycle.
  for (const auto& [root, members] :
       std::vector<std::pair<std::string, size_t>>{{"k_nested", 3}, {"k_fact", 2}, {"k_cycle", 4}}) {
    CAPTURE(root);
    TempDir dir = temp_dir("kiln-amdgpu-link-test");
    ClosureArtifacts c = compile_closure(dir, "gpu_amdgpu.ll", root, "gfx942", "bc");
    REQUIRE(c.blobs.size() == members);
    CHECK(c.symbols.size() == members);
    for (const std::string& bc : c.blobs)
      CHECK(bc.compare(0, 4, "BC\xC0\xDE") == 0);
    auto image = link::link_amdgpu_image(c.blobs, c.names, t.cpu, t.features);
    INFO((image ? std::string() : image.error().message));
    REQUIRE(image);
    auto elf = read_elf(*image);
    REQUIRE(elf);
    CHECK(elf->machine == kElfMachineAmdgpu);
    CHECK(elf->type == 3); // ET_DYN: what the HIP runtime loads
    std::set<std::string> defined = defined_symbols(*elf);
    for (const std::string& s : c.symbols)
      CHECK_MESSAGE(defined.count(s), s);

    // The same closure links to the same bytes.
    auto again = link::link_amdgpu_image(c.blobs, c.names, t.cpu, t.features);
    REQUIRE(again);
    CHECK(*again == *image);
  }
}

TEST_CASE("AMDGPU link: inputs that are not bitcode or do not link fail naming them") {
  core::TargetDesc t = resolved("gfx942");
  auto none = link::link_amdgpu_image({}, {}, t.cpu, t.features);
  REQUIRE_FALSE(none);
  CHECK(none.error().code == Code::internal);
  CHECK(none.error().message == "AMDGPU link for gfx942: nothing to link");

  auto garbage = link::link_amdgpu_image({"not bitcode"}, {"bogus"}, t.cpu, t.features);
  REQUIRE_FALSE(garbage);
  INFO(garbage.error().message);
  CHECK(garbage.error().message.rfind("AMDGPU link for gfx942: cannot read bitcode of bogus: ", 0) ==
        0);

  // The same job twice defines its symbol twice: the IR link refuses it.
  TempDir dir = temp_dir("kiln-amdgpu-link-test");
  ClosureArtifacts c = compile_closure(dir, "gpu_amdgpu.ll", "k_nested", "gfx942", "bc");
  REQUIRE_FALSE(c.blobs.empty());
  auto twice =
      link::link_amdgpu_image({c.blobs[0], c.blobs[0]}, {c.names[0], "again"}, t.cpu, t.features);
  REQUIRE_FALSE(twice);
  INFO(twice.error().message);
  CHECK(twice.error().message.rfind("AMDGPU link for gfx942: IR link failed at again: ", 0) == 0);
  CHECK(twice.error().message.find("symbol multiply defined") != std::string::npos);

  // A member missing: --no-undefined makes lld name the open symbol.
  size_t kernel = c.blobs.size();
  for (size_t i = 0; i < c.blobs.size(); ++i) {
    llvm::LLVMContext ctx;
    auto m = parse_bitcode(ctx, c.blobs[i]);
    for (const llvm::Function& f : *m)
      if (!f.isDeclaration() && f.getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL)
        kernel = i;
  }
  REQUIRE(kernel < c.blobs.size());
  auto alone = link::link_amdgpu_image({c.blobs[kernel]}, {c.names[kernel]}, t.cpu, t.features);
  REQUIRE_FALSE(alone);
  INFO(alone.error().message);
  CHECK(alone.error().message.rfind("AMDGPU link for gfx942: lld failed: ", 0) == 0);
  CHECK(alone.error().message.find("undefined symbol: __kiln_deferred_") != std::string::npos);
}

namespace {

// `ir` as bitcode, as a precompile stores a finished AMDGPU job.
std::string bitcode_of(const std::string& ir) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic err;
  auto m = llvm::parseAssemblyString(ir, err, ctx);
  REQUIRE_MESSAGE(m, err.getMessage().str());
  std::string bc;
  llvm::raw_string_ostream os(bc);
  llvm::WriteBitcodeToFile(*m, os);
  os.flush();
  return bc;
}

// Links on a thread of its own: a code generator that has compiled nothing.
Result<std::string> link_on_new_thread(const std::vector<std::string>& blobs,
                                       const std::vector<std::string>& names,
                                       const core::TargetDesc& t) {
  std::optional<Result<std::string>> out;
  std::thread([&] { out.emplace(link::link_amdgpu_image(blobs, names, t.cpu, t.features)); })
      .join();
  return std::move(*out);
}

// A kernel whose LDS use the device cannot hold: code generation reports an
// error after part of the pipeline ran on it.
const std::string kTooMuchLds = R"(
target triple = "amdgcn-amd-amdhsa"
@big = internal addrspace(3) global [1048576 x i32] poison, align 4
define amdgpu_kernel void @k_lds(ptr addrspace(1) %out, i32 %i) {
  %p = getelementptr [1048576 x i32], ptr addrspace(3) @big, i32 0, i32 %i
  store i32 %i, ptr addrspace(3) %p, align 4
  %v = load i32, ptr addrspace(3) %p, align 4
  store i32 %v, ptr addrspace(1) %out, align 4
  ret void
}
)";

} // namespace

TEST_CASE("AMDGPU link: a thread's code generator gives each closure the bytes a new one does") {
  // The pipeline is kept per thread and runs module after module; what it
  // compiled before, or a module that failed, must not show in the next.
  core::TargetDesc t = resolved("gfx942");
  std::vector<ClosureArtifacts> closures;
  std::vector<std::string> alone;
  TempDir dir = temp_dir("kiln-amdgpu-link-test");
  for (const char* root : {"k_nested", "k_fact", "k_cycle"}) {
    closures.push_back(compile_closure(dir, "gpu_amdgpu.ll", root, "gfx942", "bc"));
    auto image = link_on_new_thread(closures.back().blobs, closures.back().names, t);
    INFO((image ? std::string() : image.error().message));
    REQUIRE(image);
    alone.push_back(*image);
  }
  std::string lds = bitcode_of(kTooMuchLds);
  auto check_closure = [&](size_t i) {
    CAPTURE(i);
    auto image = link::link_amdgpu_image(closures[i].blobs, closures[i].names, t.cpu, t.features);
    REQUIRE(image);
    CHECK(*image == alone[i]);
  };
  auto check_failure = [&] {
    auto failed = link::link_amdgpu_image({lds}, {"lds"}, t.cpu, t.features);
    REQUIRE_FALSE(failed);
    INFO(failed.error().message);
    CHECK(failed.error().message.rfind("AMDGPU link for gfx942: code generation failed: ", 0) == 0);
  };
  // One after another on this thread, then each after a failed module.
  for (size_t i = 0; i < closures.size(); ++i)
    check_closure(i);
  for (size_t i = 0; i < closures.size(); ++i) {
    check_failure();
    check_closure(i);
  }
}

namespace {

// A module of `kernels` kernels, each calling one internal helper, writing
// a global they share and an LDS array and, if `indirect`, calling through
// a pointer that any kernel may have stored (as a deferred reference is
// called).
std::string many_kernels(int kernels, bool indirect = false) {
  std::string ir = R"(
target triple = "amdgcn-amd-amdhsa"
@shared = addrspace(1) global i32 0, align 4
@target = addrspace(1) global ptr @callee, align 8
@lds = internal addrspace(3) global [64 x i32] poison, align 4
define internal i32 @helper(i32 %x) noinline {
  %y = mul i32 %x, 3
  %z = add i32 %y, 1
  ret i32 %z
}
define hidden i32 @callee(i32 %x) noinline {
  %y = xor i32 %x, 5
  ret i32 %y
}
)";
  for (int k = 0; k < kernels; ++k)
    ir += "define amdgpu_kernel void @many" + std::to_string(k) +
          "(ptr addrspace(1) %out, i32 %i) {\n"
          "  %v = call i32 @helper(i32 " + std::to_string(k) + ")\n"
          + (indirect ? "  %f = load ptr, ptr addrspace(1) @target, align 8\n"
                        "  %w = call i32 %f(i32 %v)\n"
                      : "  %w = add i32 %v, 7\n") +
          "  %p = getelementptr [64 x i32], ptr addrspace(3) @lds, i32 0, i32 %i\n"
          "  store i32 %w, ptr addrspace(3) %p, align 4\n"
          "  %l = load i32, ptr addrspace(3) %p, align 4\n"
          "  store i32 %l, ptr addrspace(1) %out, align 4\n"
          "  store i32 %v, ptr addrspace(1) @shared, align 4\n"
          "  ret void\n}\n";
  return ir;
}

size_t count_defined(const ElfInfo& elf, const std::string& name) {
  size_t n = 0;
  for (const ElfSymbol& s : elf.symbols)
    n += s.defined && s.name == name;
  return n;
}

} // namespace

TEST_CASE("AMDGPU link: a module of many kernels is compiled in parts, the same at any thread count") {
  core::TargetDesc t = resolved("gfx942");
  std::string bc = bitcode_of(many_kernels(40));
  auto one = link::link_amdgpu_image({bc}, {"many"}, t.cpu, t.features, 1);
  INFO((one ? std::string() : one.error().message));
  REQUIRE(one);
  auto elf = read_elf(*one);
  REQUIRE(elf);
  CHECK(elf->type == 3);
  for (int k = 0; k < 40; ++k)
    CHECK_MESSAGE(count_defined(*elf, "many" + std::to_string(k)) == 1, k);
  // Each part has its own copy of the helper its kernels call: 40 kernels
  // are 2 parts (16 kernels a part), so the code was split; the global
  // they share is defined once.
  CHECK(count_defined(*elf, "helper") == 2);
  CHECK(count_defined(*elf, "shared") == 1);
  for (unsigned threads : {2u, 3u, 8u}) {
    CAPTURE(threads);
    auto again = link::link_amdgpu_image({bc}, {"many"}, t.cpu, t.features, threads);
    REQUIRE(again);
    CHECK(*again == *one);
  }
  // Calls through a pointer: the splitter keeps every kernel that may make
  // one with every function whose address is taken. The image still
  // defines everything once and is the same at any thread count.
  std::string indirect = bitcode_of(many_kernels(40, true));
  auto ind = link::link_amdgpu_image({indirect}, {"indirect"}, t.cpu, t.features, 1);
  INFO((ind ? std::string() : ind.error().message));
  REQUIRE(ind);
  auto ind_elf = read_elf(*ind);
  REQUIRE(ind_elf);
  for (int k = 0; k < 40; ++k)
    CHECK_MESSAGE(count_defined(*ind_elf, "many" + std::to_string(k)) == 1, k);
  CHECK(count_defined(*ind_elf, "callee") == 1);
  CHECK(count_defined(*ind_elf, "target") == 1);
  auto ind_again = link::link_amdgpu_image({indirect}, {"indirect"}, t.cpu, t.features, 4);
  REQUIRE(ind_again);
  CHECK(*ind_again == *ind);

  // Fewer kernels than two parts' worth: one code generation, one helper.
  auto few = link::link_amdgpu_image({bitcode_of(many_kernels(20))}, {"few"}, t.cpu, t.features, 4);
  REQUIRE(few);
  auto few_elf = read_elf(*few);
  REQUIRE(few_elf);
  CHECK(count_defined(*few_elf, "helper") == 1);
}

TEST_CASE("AMDGPU link: an injected link failure names its point") {
  fault::set_plan("link:amdgpu");
  std::string injected = fault::message("link:amdgpu");
  auto image = link::link_amdgpu_image({"unused"}, {"unused"}, "gfx942", "");
  fault::set_plan("");
  REQUIRE_FALSE(image);
  CHECK(image.error().code == Code::internal);
  CHECK(image.error().message == injected);
}
