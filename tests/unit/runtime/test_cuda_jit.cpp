// Unit tests for the CUDA driver-JIT image maker (src/runtime/cuda/cuda_jit.h)
// where no device is present: it reports unavailable instead of linking.
#include "runtime/cuda/cuda_jit.h"

#include "runtime/cuda/cuda_select.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::runtime;

TEST_CASE("without an NVIDIA device the driver's JIT is unavailable, with the reason") {
  if (cuda_device()) {
    MESSAGE("skipped: a CUDA device is present; tests/gpu covers the JIT");
    auto fp = cuda_jit_fingerprint();
    REQUIRE(fp);
    CHECK(fp->find("cuda-driver-jit ") == 0);
    return;
  }
  const std::string why = cuda_device().error().message;
  auto fp = cuda_jit_fingerprint();
  REQUIRE_FALSE(fp);
  CHECK(fp.error().code == Code::unavailable);
  CHECK(fp.error().message == why);
  auto cubin = cuda_jit_link({".version 8.0\n.target sm_90\n"}, {"job"});
  REQUIRE_FALSE(cubin);
  CHECK(cubin.error().code == Code::unavailable);
  CHECK(cubin.error().message == why);
}
