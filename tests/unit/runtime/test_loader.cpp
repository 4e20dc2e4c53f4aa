// Unit tests for the loader's device dispatch (src/runtime/loader.h): what a
// load without a target picks, and a GPU load on a machine without the GPU.
#include "runtime/loader.h"

#include "fixtures/cache.hpp"
#include "runtime/cuda/cuda_select.h"
#include "runtime/hip/hip_select.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::test;

namespace {

// A cache holding one root, "k", precompiled for `target` (its job and
// closure; no image).
struct OneRoot {
  TestCache file = open_cache("kiln-loader-test");
  kiln_cache cache;
  core::ClosureRecord closure;

  explicit OneRoot(const std::string& target) {
    cache.storage = std::make_unique<storage::Storage>(std::move(file.store));
    storage::Store& local = cache.storage->local();
    core::JobRecord job;
    job.key = hash128("loader-test job " + target);
    job.entry = "k";
    job.symbol = "__kiln_deferred_" + job.key.hex();
    job.target = target;
    job.options = "-O2";
    job.module_hash = hash128("module");
    job.toolchain = "test";
    REQUIRE(local.put_job(job, {{"ptx", "// no code"}}, {}));
    closure.key = hash128("loader-test closure " + target);
    closure.root_job = job.key;
    closure.target = target;
    closure.members = {{job.symbol, job.key, {}}};
    REQUIRE(local.put_closure(closure, {{"k", target, closure.key}}));
  }
};

bool any_gpu() { return bool(cuda_device()) || bool(hip_device()); }

} // namespace

TEST_CASE("a load names a root") {
  OneRoot one("host");
  auto img = load_image(one.cache, "", "host");
  REQUIRE_FALSE(img);
  CHECK(img.error().code == Code::invalid_argument);
}

TEST_CASE("an NVIDIA load without a device is unavailable, saying CUDA is missing") {
  if (cuda_device()) {
    MESSAGE("skipped: a CUDA device is present; the integration tests cover real loads");
    return;
  }
  OneRoot one("sm_90");
  auto img = load_image(one.cache, "k", "sm_90");
  REQUIRE_FALSE(img);
  CHECK(img.error().code == Code::unavailable);
  CHECK_MESSAGE(img.error().message.find(cuda_device().error().message) != std::string::npos,
                img.error().message);
  CHECK(img.error().message.find("'k'") != std::string::npos);
}

TEST_CASE("a load without a target picks no GPU build when no GPU is present") {
  if (any_gpu()) {
    MESSAGE("skipped: a GPU is present");
    return;
  }
  for (const char* target : {"sm_90", "gfx942"}) {
    CAPTURE(target);
    OneRoot one(target);
    // The host is the choice, and the cache has no host build of "k".
    auto img = load_image(one.cache, "k", "");
    REQUIRE_FALSE(img);
    CHECK(img.error().code == Code::not_found);
  }
  // Named by its closure's key, a root's own target is the choice: here the
  // CUDA backend's, which has no device.
  OneRoot nv("sm_90");
  auto by_key = load_image(nv.cache, nv.closure.key.hex(), "");
  REQUIRE_FALSE(by_key);
  CHECK(by_key.error().code == Code::unavailable);
}
