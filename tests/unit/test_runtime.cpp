#include "runtime/cuda/cuda_select.h"
#include "core/target.h"
#include "runtime/backends.h"
#include "runtime/loader.h"
#include "codegen/target.h"

#include <doctest/doctest.h>

using namespace kiln::runtime;

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

TEST_CASE("cubins run on the same major with no higher minor; 'a' only on its own arch") {
  CHECK(cubin_runs_on("sm_90", 9, 0));
  CHECK(cubin_runs_on("sm_80", 8, 6));
  CHECK_FALSE(cubin_runs_on("sm_86", 8, 0));
  CHECK_FALSE(cubin_runs_on("sm_80", 9, 0));
  CHECK(cubin_runs_on("sm_90a", 9, 0));
  CHECK_FALSE(cubin_runs_on("sm_100a", 10, 3));
  CHECK(cubin_runs_on("sm_100f", 10, 3));
}

TEST_CASE("PTX JITs forward to newer devices, never across 'a' or 'f' boundaries") {
  CHECK(ptx_jits_on("sm_80", 9, 0));
  CHECK(ptx_jits_on("sm_75", 12, 0));
  CHECK_FALSE(ptx_jits_on("sm_100", 9, 0));
  CHECK_FALSE(ptx_jits_on("sm_90a", 10, 0));
  CHECK(ptx_jits_on("sm_90a", 9, 0));
  CHECK_FALSE(ptx_jits_on("sm_100f", 12, 0));
}

TEST_CASE("target selection prefers a running cubin, exact arch first, then PTX JIT") {
  // H200: compute capability 9.0.
  CHECK(select_nvidia_target({"sm_80", "sm_90", "host"}, 9, 0).target == "sm_90");
  CHECK_FALSE(select_nvidia_target({"sm_80", "sm_90"}, 9, 0).jit);
  CHECK(select_nvidia_target({"sm_90", "sm_90a"}, 9, 0).target == "sm_90a");
  NvChoice jit = select_nvidia_target({"sm_75", "sm_80", "sm_100", "gfx942"}, 9, 0);
  CHECK(jit.target == "sm_80");
  CHECK(jit.jit);
  // An 8.6 device (A10, RTX 30-series) runs sm_80's cubin rather than JIT sm_75's PTX.
  NvChoice ampere = select_nvidia_target({"sm_75", "sm_80", "sm_90"}, 8, 6);
  CHECK(ampere.target == "sm_80");
  CHECK_FALSE(ampere.jit);
  CHECK(select_nvidia_target({"sm_100a", "gfx942", "host"}, 9, 0).target.empty());
}

TEST_CASE("device kinds and image arches come from the target spec alone") {
  CHECK(kiln::core::target_kind("sm_90") == kiln::core::TargetKind::nvptx);
  CHECK(kiln::core::target_kind("gfx942:xnack-") == kiln::core::TargetKind::amdgpu);
  CHECK(kiln::core::target_kind("host") == kiln::core::TargetKind::host);
  CHECK(kiln::core::image_arch("gfx942:xnack-") == "gfx942:xnack-");
  CHECK(kiln::core::image_arch("host") != "host");
}

TEST_CASE("a HIP device's gcnArchName becomes a target spec the compiler accepts") {
  CHECK(kiln::runtime::hip_target_spec("gfx942:sramecc+:xnack-") == "gfx942:xnack-:sramecc+");
  CHECK(kiln::runtime::hip_target_spec("gfx90a:xnack+") == "gfx90a:xnack+");
  CHECK(kiln::runtime::hip_target_spec("gfx1100") == "gfx1100");
  for (const char* name : {"gfx942:sramecc+:xnack-", "gfx90a:sramecc-:xnack+", "gfx1100"})
    CHECK_MESSAGE(kiln::codegen::resolve_target(kiln::runtime::hip_target_spec(name)),
                  name << " does not resolve");
}
