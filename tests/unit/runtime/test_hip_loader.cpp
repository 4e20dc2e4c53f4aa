// Unit tests for the HIP loader (src/runtime/hip/hip_loader.h), the twin of
// test_cuda_loader.cpp.
#include "runtime/hip/hip_loader.h"

#include "fixtures/records.hpp"
#include "runtime/hip/hip_select.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::test;

TEST_CASE("the HIP loader refuses what it cannot load as unavailable, naming the closure") {
  core::ClosureRecord c = lone_closure("hip-loader-test", "gfx942");
  SymbolMap symbols;
  auto mod = load_hip_image("not a code object", c, symbols);
  REQUIRE_FALSE(mod);
  CHECK(mod.error().code == Code::unavailable);
  const std::string& msg = mod.error().message;
  CHECK(msg.find("image of closure " + c.key.hex() + " (gfx942)") != std::string::npos);
  if (hip_device())
    CHECK_MESSAGE(msg.find("hipModuleLoadData of ") == 0, msg);
  else
    CHECK(msg == "cannot load image of closure " + c.key.hex() + " (gfx942): " +
                     hip_device().error().message);
  CHECK(symbols.empty());
}
