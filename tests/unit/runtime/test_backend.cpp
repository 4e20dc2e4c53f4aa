// Unit tests for the loader's dispatch table (src/runtime/backend.h): every
// kind of target has its backend, and each backend answers for its device,
// present or not.
#include "runtime/backend.h"

#include <doctest/doctest.h>

#include <set>

using namespace kiln;
using namespace kiln::runtime;

namespace {

constexpr core::TargetKind kKinds[] = {core::TargetKind::host, core::TargetKind::nvptx,
                                       core::TargetKind::amdgpu};

} // namespace

TEST_CASE("every kind of target has a complete backend of its own") {
  for (core::TargetKind kind : kKinds) {
    CAPTURE(core::target_kind_name(kind));
    const Backend& b = backend_for(kind);
    CHECK(b.kind == kind);
    CHECK(b.name != nullptr);
    CHECK(bool(b.load));
    CHECK(bool(b.choose_target));
    CHECK(bool(b.device_target));
  }
  CHECK(std::string(backend_for(core::target_kind("sm_90a")).name) == "CUDA");
  CHECK(std::string(backend_for(core::target_kind("gfx942:xnack-")).name) == "HIP");
  CHECK(std::string(backend_for(core::target_kind("host")).name) == "host");
}

TEST_CASE("a load without a target asks the GPUs first, the host last, each once") {
  std::span<const Backend> all = backends();
  REQUIRE(all.size() == std::size(kKinds));
  CHECK(all[0].kind == core::TargetKind::nvptx);
  CHECK(all[1].kind == core::TargetKind::amdgpu);
  CHECK(all.back().kind == core::TargetKind::host);
  std::set<core::TargetKind> seen;
  for (const Backend& b : all) {
    CHECK(seen.insert(b.kind).second);
    CHECK(&backend_for(b.kind) == &b);
  }
}

TEST_CASE("each backend names its present device's target, or why there is none") {
  for (const Backend& b : backends()) {
    CAPTURE(b.name);
    auto spec = b.device_target();
    if (spec) {
      CHECK(core::target_kind(*spec) == b.kind);
      // The present device runs code for its own target.
      auto chosen = b.choose_target({"sm_1", *spec, "gfx1"});
      REQUIRE(chosen);
      CHECK(*chosen == *spec);
    } else {
      CHECK(b.kind != core::TargetKind::host);
      CHECK(spec.error().code == Code::unavailable);
      CHECK(spec.error().message.find(b.name) != std::string::npos);
      auto chosen = b.choose_target({"sm_90", "gfx942", "host"});
      REQUIRE(chosen);
      CHECK(chosen->empty());
    }
  }
}
