// Unit tests for target specs as Kiln's own concept (src/core/target.cpp):
// the kind a stored spec names, the image arch and format it implies.
#include "core/target.h"

#include <doctest/doctest.h>

using namespace kiln::core;

TEST_CASE("a spec's kind comes from its form alone") {
  CHECK(target_kind("sm_90") == TargetKind::nvptx);
  CHECK(target_kind("sm_90a") == TargetKind::nvptx);
  CHECK(target_kind("gfx942:xnack-") == TargetKind::amdgpu);
  CHECK(target_kind("gfx1100") == TargetKind::amdgpu);
  CHECK(target_kind("host") == TargetKind::host);
  // Near misses are not GPU specs.
  CHECK(target_kind("sm") == TargetKind::host);
  CHECK(target_kind("gf") == TargetKind::host);
  CHECK(target_kind("") == TargetKind::host);
  CHECK(std::string(target_kind_name(TargetKind::nvptx)) == "nvidia");
  CHECK(std::string(target_kind_name(TargetKind::amdgpu)) == "amd");
  CHECK(std::string(target_kind_name(TargetKind::host)) == "host");
}

TEST_CASE("image arch: the host's machine for host code, the spec itself for GPUs") {
  CHECK(image_arch("gfx942:xnack-") == "gfx942:xnack-");
  CHECK(image_arch("sm_90") == "sm_90");
  CHECK(image_arch("host") == host_arch());
  CHECK(std::string(host_arch()).find("-linux") != std::string::npos);
}

TEST_CASE("image format per kind") {
  CHECK(std::string(image_format(TargetKind::host)) == "so");
  CHECK(std::string(image_format(TargetKind::nvptx)) == "cubin");
  CHECK(std::string(image_format(TargetKind::amdgpu)) == "hsaco");
}

TEST_CASE("canonical options text") {
  CodegenOptions o;
  CHECK(o.canonical() == "-O2");
  o.opt_level = 0;
  o.debug = true;
  CHECK(o.canonical() == "-O0 -g");
}

TEST_CASE("an AMD arch name becomes the canonical spec: features sorted by name") {
  // HIP's gcnArchName in either order; codegen stores sramecc before xnack.
  CHECK(canonical_amd_spec("gfx90a:xnack-:sramecc+") == "gfx90a:sramecc+:xnack-");
  CHECK(canonical_amd_spec("gfx942:sramecc+:xnack-") == "gfx942:sramecc+:xnack-");
  CHECK(canonical_amd_spec("gfx908:xnack+:sramecc-") == "gfx908:sramecc-:xnack+");
  CHECK(canonical_amd_spec("gfx90a:xnack+") == "gfx90a:xnack+");
  CHECK(canonical_amd_spec("gfx1100") == "gfx1100");
  // Idempotent, and empty pieces dropped.
  CHECK(canonical_amd_spec(canonical_amd_spec("gfx90a:xnack-:sramecc+")) ==
        "gfx90a:sramecc+:xnack-");
  CHECK(canonical_amd_spec("gfx942::xnack-:") == "gfx942:xnack-");
  CHECK(canonical_amd_spec("") == "");
}

TEST_CASE("NVIDIA arch specs parse into major, minor and suffix") {
  auto a = parse_nv_arch("sm_90a");
  REQUIRE(a);
  CHECK(a->major == 9);
  CHECK(a->minor == 0);
  CHECK(a->suffix == 'a');
  auto b = parse_nv_arch("sm_121");
  REQUIRE(b);
  CHECK(b->major == 12);
  CHECK(b->minor == 1);
  CHECK(b->suffix == 0);
  CHECK(parse_nv_arch("sm_100f")->suffix == 'f');
  CHECK_FALSE(parse_nv_arch("gfx942"));
  CHECK_FALSE(parse_nv_arch("sm_9"));
  CHECK_FALSE(parse_nv_arch("sm_9x"));
  CHECK_FALSE(parse_nv_arch("sm_1000"));
}

TEST_CASE("every NVIDIA target the compiler knows parses, and the list a user reads names each") {
  std::string list = nvidia_target_list();
  CHECK(list.rfind("sm_75, sm_80, ", 0) == 0);
  CHECK(list.find("sm_90, sm_90a, sm_100[a|f]") != std::string::npos);
  for (const NvTarget& t : nvidia_targets()) {
    INFO(t.spec);
    auto a = parse_nv_arch(t.spec);
    REQUIRE(a);
    CHECK(target_kind(t.spec) == TargetKind::nvptx);
    CHECK(t.ptx_isa >= 78);
    // Its base architecture is in the list as written, or folded with it.
    std::string base = "sm_" + std::to_string(a->major) + std::to_string(a->minor);
    CHECK(list.find(base) != std::string::npos);
  }
}

TEST_CASE("an AMD spec reads as processor and features, and a bad one says why") {
  auto a = parse_amd_arch("gfx942:xnack-:sramecc+");
  REQUIRE(a);
  CHECK(a->processor == "gfx942");
  REQUIRE(a->features.size() == 2);
  CHECK(a->features[0] == std::pair<std::string, char>{"xnack", '-'});
  CHECK(a->spec() == "gfx942:sramecc+:xnack-");
  auto bad = parse_amd_arch("gfx942:xnack");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == kiln::Code::invalid_argument);
  CHECK(bad.error().message == "feature 'xnack' must end in + or -");
  CHECK_FALSE(bool(parse_amd_arch("sm_90")));
  CHECK_FALSE(bool(parse_amd_arch("gfx")));
}
