// Unit tests for NVIDIA target selection (src/runtime/cuda/cuda_select.h):
// the driver's cubin and PTX compatibility rules, and the device queries
// without a device.
#include "runtime/cuda/cuda_select.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::runtime;

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
  CHECK(select_nvidia_target({}, 9, 0).target.empty());
}

TEST_CASE("without an NVIDIA device the queries say why and choose nothing") {
  if (cuda_device()) {
    MESSAGE("skipped: a CUDA device is present");
    auto arch = cuda_device_arch();
    REQUIRE(arch);
    CHECK(core::parse_nv_arch(*arch));
    auto chosen = choose_cuda_target({*arch, "host"});
    REQUIRE(chosen);
    CHECK(*chosen == *arch);
    return;
  }
  auto arch = cuda_device_arch();
  REQUIRE_FALSE(arch);
  CHECK(arch.error().code == Code::unavailable);
  CHECK(arch.error().message.find("CUDA") != std::string::npos);
  auto chosen = choose_cuda_target({"sm_80", "sm_90", "host"});
  REQUIRE(chosen);
  CHECK(chosen->empty());
  auto jit = cuda_needs_jit("sm_90");
  REQUIRE_FALSE(jit);
  CHECK(jit.error().code == Code::unavailable);
  CHECK(jit.error().message.find("cannot load sm_90 code: ") == 0);
}
