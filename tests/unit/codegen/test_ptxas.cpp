// Unit tests for the CUDA toolkit's PTX assembler run as a program
// (src/codegen/ptxas.cpp): its version text, a small PTX assembled into a
// relocatable cubin, ptxas's own message for bad PTX, and what a ptxas that
// is missing or switched off gives.
#include "codegen/compile.h"
#include "codegen/ptxas.h"
#include "fixtures/process.hpp"
#include "support/elf.h"

#include <doctest/doctest.h>

#include <cctype>
#include <string>
#include <vector>

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

bool have_ptxas() {
  if (!codegen::ptxas_path().empty())
    return true;
  MESSAGE("skipped: no ptxas (set KILN_PTXAS or CUDA_HOME)");
  return false;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

const char* const kNowhere = "/nonexistent/kiln-unit/bin/ptxas";

} // namespace

TEST_CASE("ptxas: the version names the assembler's release") {
  if (!have_ptxas()) {
    CHECK(codegen::ptxas_version().empty());
    return;
  }
  const std::string& v = codegen::ptxas_version();
  INFO(v);
  REQUIRE(v.rfind("ptxas V", 0) == 0);
  // "ptxas V13.0.88": three dotted numbers and nothing after them.
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

TEST_CASE("ptxas: a small PTX assembles into a relocatable cubin defining its function") {
  if (!have_ptxas())
    return;
  auto cubin = codegen::assemble_ptx(kAddOne, "sm_90", "add-one");
  INFO((cubin ? std::string() : cubin.error().message));
  REQUIRE(cubin);
  auto elf = read_elf(*cubin);
  REQUIRE(elf);
  CHECK(elf->machine == kElfMachineCuda);
  CHECK(elf->type == 1); // ET_REL: nvJitLink links it later
  bool defined = false;
  for (const ElfSymbol& s : elf->symbols)
    if (s.name == "kiln_add_one")
      defined = s.defined && s.function;
  CHECK(defined);

  // Another architecture is other code.
  auto sm80 = codegen::assemble_ptx(replaced(kAddOne, "sm_90", "sm_80"), "sm_80", "add-one");
  INFO((sm80 ? std::string() : sm80.error().message));
  REQUIRE(sm80);
  CHECK(*sm80 != *cubin);
}

TEST_CASE("ptxas: bad PTX fails with ptxas's own message") {
  if (!have_ptxas())
    return;
  auto garbage = codegen::assemble_ptx("this is not ptx\n", "sm_90", "job 'g' (sm_90)");
  REQUIRE_FALSE(garbage);
  INFO(garbage.error().message);
  CHECK(garbage.error().code == Code::internal);
  CHECK(garbage.error().message.rfind("job 'g' (sm_90): ptxas -arch=sm_90 failed (exit ", 0) == 0);
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
  CHECK(older.error().message.find("-arch=sm_80") != std::string::npos);
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
