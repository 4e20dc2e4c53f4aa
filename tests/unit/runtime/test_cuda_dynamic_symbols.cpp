// Unit tests for the CUDA driver's symbol table
// (src/runtime/cuda/cuda_dynamic_symbols.h): a missing driver is a reason,
// never a crash, and the fault point dlopen:cuda stands in for one.
#include "runtime/cuda/cuda_dynamic_symbols.h"

#include "support/fault.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::runtime;

TEST_CASE("an injected dlopen:cuda failure makes the CUDA table unavailable, saying so") {
  fault::set_plan("dlopen:cuda");
  auto cu = load_cuda_symbols();
  fault::set_plan("");
  REQUIRE_FALSE(cu);
  CHECK(cu.error().code == Code::unavailable);
  CHECK(cu.error().message.find("injected fault at dlopen:cuda") != std::string::npos);
}

TEST_CASE("the CUDA table is complete or unavailable with the driver's problem") {
  const Result<CudaSymbols>& cu = cuda_symbols();
  CHECK(&cu == &cuda_symbols()); // loaded once
  if (!cu) {
    CHECK(cu.error().code == Code::unavailable);
    CHECK(cu.error().message.find("CUDA driver") != std::string::npos);
    return;
  }
#define KILN_CUDA(name, params) CHECK_MESSAGE(bool(cu->name), #name);
#include "runtime/cuda/cuda_symbols.def"
#undef KILN_CUDA
}
