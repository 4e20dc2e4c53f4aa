// Unit tests for the CUDA toolkit's PTX assembler (src/codegen/ptxas.cpp):
// which assembler runs (the PTX compiler library where the build linked it,
// the ptxas program where KILN_PTXAS names it or the library is absent), its
// version text, a small PTX assembled into a relocatable cubin, the
// assembler's own message for bad PTX, and what a ptxas that is missing or
// switched off gives.
#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "codegen/llvm_target.h"
#include "link/nvjitlink.h"
#include "fixtures/files.hpp"
#include "fixtures/process.hpp"
#include "support/elf.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

using namespace kiln;
using namespace kiln::test;

namespace {

// One device function, as LLVM's NVPTX backend would write it.
constexpr const char* kAddOne = R"(.version 7.8
.target sm_90
.address_size 64

.visible .func (.param .b32 func_retval0) kiln_add_one(.param .b32 kiln_add_one_param_0)
{
	.reg .b32 	%r<3>;
	ld.param.u32 	%r1, [kiln_add_one_param_0];
	add.s32 	%r2, %r1, 1;
	st.param.b32 	[func_retval0], %r2;
	ret;
}
)";

// A kernel and the device function it calls.
constexpr const char* kKernel = R"(.version 7.8
.target sm_90
.address_size 64

.func (.param .b32 func_retval0) kiln_twice(.param .b32 kiln_twice_param_0)
{
	.reg .b32 	%r<3>;
	ld.param.u32 	%r1, [kiln_twice_param_0];
	shl.b32 	%r2, %r1, 1;
	st.param.b32 	[func_retval0], %r2;
	ret;
}

.visible .entry kiln_kernel(.param .u64 kiln_kernel_param_0)
{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [kiln_kernel_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.u32 	%r1, [%rd2];
	{
	.param .b32 param0;
	st.param.b32 	[param0], %r1;
	.param .b32 retval0;
	call.uni (retval0), kiln_twice, (param0);
	ld.param.b32 	%r2, [retval0];
	}
	st.global.u32 	[%rd2], %r2;
	ret;
}
)";

// Whether jobs are assembled here, one by one (the program or the library),
// rather than at the image link or not at all.
bool have_ptxas() {
  if (codegen::ptx_assembler() == codegen::PtxAssembler::program ||
      codegen::ptx_assembler() == codegen::PtxAssembler::library)
    return true;
  MESSAGE("skipped: no ptxas assembles per job (KILN_PTXAS=<ptxas> runs the program)");
  return false;
}

bool in_process() { return codegen::ptx_assembler() == codegen::PtxAssembler::library; }

// The start of an assembly error for `what` and `arch`, as each assembler words it.
std::string failure_prefix(const std::string& what, const std::string& arch) {
  if (in_process())
    return what + ": nvPTXCompiler --gpu-name=" + arch +
           " failed in nvPTXCompilerCompile (NVPTXCOMPILE_ERROR_COMPILATION_FAILURE): ";
  return what + ": ptxas -arch=" + arch + " failed (exit ";
}

// A relocatable CUDA ELF; whether it defines function `name`.
bool defines_function(const std::string& cubin, const std::string& name) {
  auto elf = read_elf(cubin);
  INFO((elf ? std::string() : elf.error().message));
  REQUIRE(elf);
  CHECK(elf->machine == kElfMachineCuda);
  CHECK(elf->type == 1); // ET_REL: nvJitLink links it later
  for (const ElfSymbol& s : elf->symbols)
    if (s.name == name)
      return s.defined && s.function;
  return false;
}

// "ptxas V13.0.88": three dotted numbers after "ptxas V".
void check_program_version(const std::string& v) {
  INFO(v);
  REQUIRE(v.rfind("ptxas V", 0) == 0);
  std::string number = v.substr(7);
  int dots = 0;
  for (char c : number) {
    if (c == '.')
      ++dots;
    else
      CHECK(std::isdigit(static_cast<unsigned char>(c)));
  }
  CHECK(dots == 2);
  // The program says the same on its last version line.
  auto r = run_process({codegen::ptxas_path(), "--version"});
  REQUIRE(r);
  CHECK(r->output.find(", " + v.substr(6) + "\n") != std::string::npos);
}

// The ptxas program the toolkit has, whatever assembles here; empty if none.
std::string toolkit_ptxas() {
  if (const char* p = std::getenv("KILN_PTXAS"))
    return p;
  return codegen::ptxas_path();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

const char* const kNowhere = "/nonexistent/kiln-unit/bin/ptxas";

} // namespace

TEST_CASE("ptxas: the assembler is the library where linked, else nvJitLink at the image "
          "link, else the program") {
  if (std::getenv("KILN_PTXAS")) {
    MESSAGE("skipped: KILN_PTXAS is set");
    return;
  }
  codegen::PtxAssembler expected = codegen::ptx_compiler_linked()   ? codegen::PtxAssembler::library
                                   : link::nvjitlink_fingerprint()  ? codegen::PtxAssembler::link
                                   : !codegen::ptxas_path().empty() ? codegen::PtxAssembler::program
                                                                    : codegen::PtxAssembler::none;
  CHECK(codegen::ptx_assembler() == expected);
}

// No comma in the name: the child runs it by doctest's -tc filter, which
// splits at commas.
TEST_CASE("ptxas: KILN_PTXAS=nvjitlink defers assembly to the image link and is named in the "
          "fingerprint") {
  if (child_role() != "ptxas-link") {
    if (!link::nvjitlink_fingerprint()) {
      MESSAGE("skipped: nvJitLink is not installed");
      return;
    }
    check_child(run_child("ptxas: KILN_PTXAS=nvjitlink defers assembly to the image link and "
                          "is named in the fingerprint",
                          "ptxas-link", {"KILN_PTXAS=nvjitlink"}));
    return;
  }
  child_ran();
  CHECK(codegen::ptx_assembler() == codegen::PtxAssembler::link);
  CHECK(codegen::ptxas_path() != "nvjitlink"); // not a program to run
  auto fp = link::nvjitlink_fingerprint();
  REQUIRE(fp);
  CHECK(codegen::ptxas_version() == *fp + " at the image link");
  auto t = codegen::resolve_target("sm_90");
  REQUIRE(t);
  // Jobs store PTX only; what will assemble it keys them.
  CHECK(codegen::artifact_formats(*t) == std::vector<std::string>{"ptx"});
  CHECK(codegen::toolchain_fingerprint(*t).find("; " + *fp + " at the image link") !=
        std::string::npos);
  // nvJitLink's release caps the PTX ISA as its ptxas's would.
  CHECK(codegen::newest_ptx_isa() > 0);
  auto r = codegen::assemble_ptx(kAddOne, "sm_90", "job 'k' (sm_90)");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::unavailable);
  CHECK(r.error().message.rfind("job 'k' (sm_90): assembly is deferred to the image link", 0) ==
        0);
}

TEST_CASE("ptxas: the version names the assembler's release") {
  if (codegen::ptx_assembler() == codegen::PtxAssembler::none) {
    CHECK(codegen::ptxas_version().empty());
    return;
  }
  const std::string& v = codegen::ptxas_version();
  INFO(v);
  if (codegen::ptx_assembler() == codegen::PtxAssembler::link) {
    unsigned major = 0, minor = 0;
    CHECK(std::sscanf(v.c_str(), "nvJitLink %u.%u at the image link", &major, &minor) == 2);
    CHECK(major >= 12);
    return;
  }
  if (!in_process()) {
    check_program_version(v);
    return;
  }
  // "ptxas V13.0 in process (libnvptxcompiler_static 0123456789abcdef)"
  const std::string tail = " in process (libnvptxcompiler_static ";
  size_t at = v.find(tail);
  REQUIRE(at != std::string::npos);
  std::string number = v.substr(7, at - 7);
  REQUIRE(v.rfind("ptxas V", 0) == 0);
  CHECK(std::count(number.begin(), number.end(), '.') == 1);
  std::string id = v.substr(at + tail.size());
  REQUIRE(id.size() == 17);
  CHECK(id.back() == ')');
  for (char c : id.substr(0, 16))
    CHECK(std::isxdigit(static_cast<unsigned char>(c)));
}

TEST_CASE("ptxas: a small PTX assembles into a relocatable cubin defining its function") {
  if (!have_ptxas())
    return;
  auto cubin = codegen::assemble_ptx(kAddOne, "sm_90", "add-one");
  INFO((cubin ? std::string() : cubin.error().message));
  REQUIRE(cubin);
  CHECK(defines_function(*cubin, "kiln_add_one"));

  // Another architecture is other code.
  auto sm80 = codegen::assemble_ptx(replaced(kAddOne, "sm_90", "sm_80"), "sm_80", "add-one");
  INFO((sm80 ? std::string() : sm80.error().message));
  REQUIRE(sm80);
  CHECK(*sm80 != *cubin);
}

TEST_CASE("ptxas: a kernel assembles into a relocatable cubin defining it") {
  if (!have_ptxas())
    return;
  auto cubin = codegen::assemble_ptx(kKernel, "sm_90", "kernel");
  INFO((cubin ? std::string() : cubin.error().message));
  REQUIRE(cubin);
  CHECK(defines_function(*cubin, "kiln_kernel"));
  // Assembling again gives the same bytes.
  auto again = codegen::assemble_ptx(kKernel, "sm_90", "kernel");
  REQUIRE(again);
  CHECK(*again == *cubin);
}

TEST_CASE("ptxas: bad PTX fails with ptxas's own message") {
  if (!have_ptxas())
    return;
  auto garbage = codegen::assemble_ptx("this is not ptx\n", "sm_90", "job 'g' (sm_90)");
  REQUIRE_FALSE(garbage);
  INFO(garbage.error().message);
  CHECK(garbage.error().code == Code::internal);
  CHECK(garbage.error().message.rfind(failure_prefix("job 'g' (sm_90)", "sm_90"), 0) == 0);
  CHECK(garbage.error().message.find("Missing .version directive") != std::string::npos);

  auto unknown = codegen::assemble_ptx(replaced(kAddOne, "%r1, 1;", "%r1, %nope;"), "sm_90", "j");
  REQUIRE_FALSE(unknown);
  INFO(unknown.error().message);
  CHECK(unknown.error().message.find("line 9") != std::string::npos);
  CHECK(unknown.error().message.find("Unknown symbol '%nope'") != std::string::npos);

  // PTX for a newer architecture than the one asked for.
  auto older = codegen::assemble_ptx(kAddOne, "sm_80", "j");
  REQUIRE_FALSE(older);
  INFO(older.error().message);
  CHECK(older.error().message.rfind(failure_prefix("j", "sm_80"), 0) == 0);
  CHECK(older.error().message.find("SM version specified by .target") != std::string::npos);
}

TEST_CASE("ptxas: KILN_PTXAS pointing nowhere is a clear unavailable") {
  if (child_role() != "ptxas-nowhere") {
    check_child(run_child("ptxas: KILN_PTXAS pointing nowhere is a clear unavailable",
                           "ptxas-nowhere", {std::string("KILN_PTXAS=") + kNowhere}));
    return;
  }
  child_ran();
  CHECK(codegen::ptxas_path() == kNowhere);
  CHECK(codegen::ptxas_version().empty());
  auto r = codegen::assemble_ptx(kAddOne, "sm_90", "job 'k' (sm_90)");
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().code == Code::unavailable);
  CHECK(r.error().message.rfind("job 'k' (sm_90): ", 0) == 0);
  CHECK(r.error().message.find(std::string("cannot run '") + kNowhere + "'") !=
        std::string::npos);
}

TEST_CASE("ptxas: an empty KILN_PTXAS switches cubins off") {
  if (child_role() != "ptxas-off") {
    check_child(run_child("ptxas: an empty KILN_PTXAS switches cubins off", "ptxas-off",
                          {"KILN_PTXAS="}));
    return;
  }
  child_ran();
  CHECK(codegen::ptxas_path().empty());
  CHECK(codegen::ptxas_version().empty());
  auto r = codegen::assemble_ptx(kAddOne, "sm_90", "job 'k' (sm_90)");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::unavailable);
  CHECK(r.error().message == "job 'k' (sm_90): no ptxas (set KILN_PTXAS or CUDA_HOME)");
  // NVIDIA jobs then store PTX only.
  auto t = codegen::resolve_target("sm_90");
  REQUIRE(t);
  CHECK(codegen::artifact_formats(*t) == std::vector<std::string>{"ptx"});
}

TEST_CASE("ptxas: KILN_PTXAS naming the program runs it even where the library is linked") {
  if (child_role() == "ptxas-program") {
    child_ran();
    CHECK(codegen::ptx_assembler() == codegen::PtxAssembler::program);
    check_program_version(codegen::ptxas_version());
    auto cubin = codegen::assemble_ptx(kKernel, "sm_90", "kernel");
    INFO((cubin ? std::string() : cubin.error().message));
    REQUIRE(cubin);
    CHECK(defines_function(*cubin, "kiln_kernel"));
    auto bad = codegen::assemble_ptx("this is not ptx\n", "sm_90", "j");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.rfind("j: ptxas -arch=sm_90 failed (exit ", 0) == 0);
    // The program names itself in the toolchain fingerprint.
    auto t = codegen::resolve_target("sm_90");
    REQUIRE(t);
    std::printf("fingerprint=%s\n", codegen::toolchain_fingerprint(*t).c_str());
    std::fflush(stdout);
    return;
  }
  std::string program = toolkit_ptxas();
  if (program.empty() || ::access(program.c_str(), X_OK) != 0) {
    MESSAGE("skipped: no ptxas program");
    return;
  }
  ProcessResult r =
      run_child("ptxas: KILN_PTXAS naming the program runs it even where the library is linked",
                "ptxas-program", {"KILN_PTXAS=" + program});
  check_child(r);
  size_t at = r.output.find("fingerprint=");
  REQUIRE(at != std::string::npos);
  std::string child_fp = r.output.substr(at + 12, r.output.find('\n', at) - at - 12);
  auto t = codegen::resolve_target("sm_90");
  REQUIRE(t);
  // Another assembler is another fingerprint; the same program the same.
  if (in_process())
    CHECK(child_fp != codegen::toolchain_fingerprint(*t));
  else if (codegen::ptx_assembler() == codegen::PtxAssembler::program)
    CHECK(child_fp == codegen::toolchain_fingerprint(*t));
}

TEST_CASE("ptxas: the library and the program make cubins with the same symbols") {
  if (!in_process()) {
    MESSAGE("skipped: the PTX compiler library is not linked");
    return;
  }
  std::string program = toolkit_ptxas();
  if (program.empty() || ::access(program.c_str(), X_OK) != 0) {
    MESSAGE("skipped: no ptxas program");
    return;
  }
  auto library = codegen::assemble_ptx(kKernel, "sm_90", "kernel");
  REQUIRE(library);
  TempDir dir = temp_dir("kiln-ptxas-test");
  REQUIRE(write_file_atomic(dir.path() + "/k.ptx", kKernel));
  auto r = run_process(
      {program, "-c", "-arch=sm_90", "-o", dir.path() + "/k.cubin", dir.path() + "/k.ptx"});
  REQUIRE(r);
  REQUIRE(r->exit_code == 0);
  auto from_program = read_file(dir.path() + "/k.cubin");
  REQUIRE(from_program);
  auto a = read_elf(*library), b = read_elf(*from_program);
  REQUIRE(a);
  REQUIRE(b);
  auto names = [](const ElfInfo& e) {
    std::vector<std::string> n;
    for (const ElfSymbol& s : e.symbols)
      if (s.defined && s.function)
        n.push_back(s.name);
    std::sort(n.begin(), n.end());
    return n;
  };
  CHECK(names(*a) == names(*b));
  CHECK(a->type == b->type);
  std::string same = *library == *from_program ? "" : "not ";
  MESSAGE("library and program cubins are " << same << "byte-identical");
}
