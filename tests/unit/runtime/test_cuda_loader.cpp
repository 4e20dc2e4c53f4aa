// Unit tests for the CUDA loader (src/runtime/cuda/cuda_loader.h) on a
// machine with or without a device: a load it cannot do is unavailable with
// the reason, never a crash.
#include "runtime/cuda/cuda_loader.h"

#include "fixtures/records.hpp"
#include "runtime/cuda/cuda_select.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::test;

TEST_CASE("the CUDA loader refuses what it cannot load as unavailable, naming the closure") {
  core::ClosureRecord c = lone_closure("cuda-loader-test", "sm_90");
  SymbolMap symbols;
  auto mod = load_cuda_image("not a cubin", c, symbols);
  REQUIRE_FALSE(mod);
  CHECK(mod.error().code == Code::unavailable);
  const std::string& msg = mod.error().message;
  CHECK(msg.find("image of closure " + c.key.hex() + " (sm_90)") != std::string::npos);
  if (cuda_device())
    // The device refuses bytes that are no image, in the driver's words.
    CHECK_MESSAGE(msg.find("cuModuleLoadData of ") == 0, msg);
  else
    CHECK(msg == "cannot load image of closure " + c.key.hex() + " (sm_90): " +
                     cuda_device().error().message);
  CHECK(symbols.empty());
}
