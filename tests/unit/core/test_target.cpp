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
