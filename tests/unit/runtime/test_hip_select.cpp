// Unit tests for AMD target selection (src/runtime/hip/hip_select.h), the
// twin of test_cuda_select.cpp: the runtime's code-object rules, the device's
// arch as a target spec, and the device queries without a device.
#include "runtime/hip/hip_select.h"

#include "codegen/target.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace kiln;
using namespace kiln::runtime;

TEST_CASE("AMD arch specs parse into processor and feature settings") {
  auto a = parse_amd_arch("gfx942:xnack-:sramecc+");
  REQUIRE(a);
  CHECK(a->processor == "gfx942");
  REQUIRE(a->features.size() == 2);
  CHECK(a->features[0] == std::pair<std::string, char>{"xnack", '-'});
  CHECK(a->features[1] == std::pair<std::string, char>{"sramecc", '+'});
  auto b = parse_amd_arch("gfx1100");
  REQUIRE(b);
  CHECK(b->processor == "gfx1100");
  CHECK(b->features.empty());
  CHECK(parse_amd_arch("gfx942:sramecc+:xnack-")); // a gcnArchName's order
  CHECK_FALSE(parse_amd_arch("sm_90"));
  CHECK_FALSE(parse_amd_arch("gfx"));
  CHECK_FALSE(parse_amd_arch("host"));
  CHECK_FALSE(parse_amd_arch("gfx942:xnack"));
  CHECK_FALSE(parse_amd_arch("gfx942:"));
}

TEST_CASE("a HIP device's gcnArchName becomes a target spec the compiler accepts") {
  CHECK(hip_target_spec("gfx942:sramecc+:xnack-") == "gfx942:xnack-:sramecc+");
  CHECK(hip_target_spec("gfx90a:xnack+") == "gfx90a:xnack+");
  CHECK(hip_target_spec("gfx1100") == "gfx1100");
  for (const char* name : {"gfx942:sramecc+:xnack-", "gfx90a:sramecc-:xnack+", "gfx1100"})
    CHECK_MESSAGE(codegen::resolve_target(hip_target_spec(name)), name << " does not resolve");
}

TEST_CASE("the gcnArchName is found by content in a raw device-properties buffer") {
  std::vector<char> props(4096, '\0');
  const char name[] = "gfx942:sramecc+:xnack-";
  std::memcpy(&props[396], "AMD Instinct MI300X", 19);
  std::memcpy(&props[1160], name, sizeof name);
  CHECK(find_gcn_arch(props) == name);
  // "gfx" inside another string, or without a digit after it, is not it.
  std::vector<char> decoy(64, '\0');
  std::memcpy(&decoy[4], "xgfx90a", 7);
  std::memcpy(&decoy[20], "gfxabc", 6);
  CHECK(find_gcn_arch(decoy).empty());
  // Unterminated at the end of the buffer: not trusted.
  std::vector<char> cut(8, '\0');
  std::memcpy(&cut[2], "gfx942", 6);
  CHECK(find_gcn_arch(cut).empty());
}

TEST_CASE("code objects run on the same processor with every named feature set alike") {
  const std::string mi300 = "gfx942:xnack-:sramecc+";
  CHECK(code_object_runs_on("gfx942", mi300));
  CHECK(code_object_runs_on("gfx942:xnack-", mi300));
  CHECK(code_object_runs_on("gfx942:sramecc+", mi300));
  CHECK(code_object_runs_on("gfx942:xnack-:sramecc+", mi300));
  CHECK(code_object_runs_on("gfx942:sramecc+:xnack-", mi300));
  CHECK_FALSE(code_object_runs_on("gfx942:xnack+", mi300));
  CHECK_FALSE(code_object_runs_on("gfx942:xnack-:sramecc-", mi300));
  CHECK_FALSE(code_object_runs_on("gfx90a", mi300));
  CHECK_FALSE(code_object_runs_on("sm_90", mi300));
  CHECK_FALSE(code_object_runs_on("host", mi300));
  // A device without the feature runs no code that names it.
  CHECK_FALSE(code_object_runs_on("gfx1100:xnack-", "gfx1100"));
  CHECK(code_object_runs_on("gfx1100", "gfx1100"));
}

TEST_CASE("target selection prefers the most specific code object that runs") {
  // MI300X: gfx942 with xnack off and sramecc on.
  const std::string mi300 = "gfx942:xnack-:sramecc+";
  CHECK(select_amd_target({"gfx942", "gfx942:xnack-:sramecc+", "host"}, mi300) ==
        "gfx942:xnack-:sramecc+");
  CHECK(select_amd_target({"gfx942", "gfx942:xnack-", "sm_90"}, mi300) == "gfx942:xnack-");
  CHECK(select_amd_target({"gfx942:xnack+", "gfx942"}, mi300) == "gfx942");
  CHECK(select_amd_target({"gfx90a", "gfx942:xnack+", "sm_90", "host"}, mi300).empty());
  CHECK(select_amd_target({}, mi300).empty());
  // The device's own gcnArchName order matches a spec too.
  CHECK(select_amd_target({"gfx942:xnack-:sramecc+"}, hip_target_spec("gfx942:sramecc+:xnack-")) ==
        "gfx942:xnack-:sramecc+");
}

TEST_CASE("without an AMD device the queries say why and choose nothing") {
  if (hip_device()) {
    MESSAGE("skipped: a HIP device is present");
    auto arch = hip_device_arch();
    REQUIRE(arch);
    CHECK(parse_amd_arch(*arch));
    auto chosen = choose_hip_target({*arch, "host"});
    REQUIRE(chosen);
    CHECK(*chosen == *arch);
    return;
  }
  auto arch = hip_device_arch();
  REQUIRE_FALSE(arch);
  CHECK(arch.error().code == Code::unavailable);
  CHECK(arch.error().message.find("HIP") != std::string::npos);
  auto chosen = choose_hip_target({"gfx942", "gfx942:xnack-", "host"});
  REQUIRE(chosen);
  CHECK(chosen->empty());
}
