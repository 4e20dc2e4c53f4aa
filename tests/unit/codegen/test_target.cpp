// Unit tests for target resolution against LLVM (src/codegen/llvm_target.cpp):
// specs to triples, CPUs and features, and the errors an unknown spec gets.
#include "codegen/llvm_target.h"

#include <doctest/doctest.h>

#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::codegen;

TEST_CASE("host resolves to this machine's triple, CPU and sorted features") {
  auto t = resolve_target("host");
  REQUIRE(t);
  CHECK(t->spec == "host");
  CHECK(t->kind == TargetKind::host);
  CHECK_FALSE(t->triple.empty());
  CHECK_FALSE(t->cpu.empty());
  std::vector<std::string> feats;
  for (size_t at = 0; at < t->features.size();) {
    size_t comma = t->features.find(',', at);
    feats.push_back(t->features.substr(at, comma - at));
    at = comma == std::string::npos ? t->features.size() : comma + 1;
  }
  CHECK(std::is_sorted(feats.begin(), feats.end()));
}

TEST_CASE("GPU specs resolve to their triples; AMD features are made canonical") {
  auto nv = resolve_target("sm_90");
  REQUIRE(nv);
  CHECK(nv->kind == TargetKind::nvptx);
  CHECK(nv->triple == "nvptx64-nvidia-cuda");
  CHECK(nv->features.rfind("+ptx", 0) == 0);
  auto amd = resolve_target("gfx942:xnack-:sramecc+");
  REQUIRE(amd);
  CHECK(amd->kind == TargetKind::amdgpu);
  CHECK(amd->spec == "gfx942:sramecc+:xnack-");
  CHECK(amd->features == "+sramecc,-xnack");
  // The same target however its features are ordered.
  CHECK(resolve_target("gfx942:sramecc+:xnack-")->spec == amd->spec);
}

TEST_CASE("unknown specs are invalid_argument and list the accepted forms") {
  for (const char* bad : {"sm_42", "gfx0", "gfx942:xnack", "gfx942:xnack+:xnack-",
                          "gfx942:wave64+", "x86", ""}) {
    auto t = resolve_target(bad);
    REQUIRE_FALSE(t);
    CHECK(t.error().code == Code::invalid_argument);
    CHECK(t.error().message.find(accepted_target_specs()) != std::string::npos);
  }
}

TEST_CASE("every kind gets a target machine and a data layout") {
  for (const char* spec : {"host", "sm_90", "gfx942"}) {
    auto t = resolve_target(spec);
    REQUIRE(t);
    auto tm = create_target_machine(*t, CodegenOptions{});
    REQUIRE_MESSAGE(tm, spec);
    auto layout = target_data_layout(*t);
    REQUIRE(layout);
    CHECK_FALSE(layout->empty());
  }
}

TEST_CASE("the toolchain fingerprint names the artifact format and LLVM") {
  auto t = resolve_target("host");
  REQUIRE(t);
  std::string fp = toolchain_fingerprint(*t);
  CHECK(fp.find("kiln-artifacts") != std::string::npos);
  CHECK(fp.find("llvm") != std::string::npos);
}

TEST_CASE("codegen errors: an unknown target names its spec") {
  for (const char* spec : {"sm_1", "gfx1", "gfx942:xnack", "gfx942:fast+", "riscv"}) {
    CAPTURE(spec);
    auto t = resolve_target(spec);
    REQUIRE_FALSE(t);
    CHECK(t.error().code == Code::invalid_argument);
    CHECK(t.error().target == spec);
    CHECK(t.error().message.find(std::string("unknown target '") + spec + "'") !=
          std::string::npos);
  }
}
