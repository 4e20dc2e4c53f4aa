// Unit tests for the HIP runtime's symbol table
// (src/runtime/hip/hip_dynamic_symbols.h), the twin of
// test_cuda_dynamic_symbols.cpp.
#include "runtime/hip/hip_dynamic_symbols.h"

#include "support/fault.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::runtime;

TEST_CASE("an injected dlopen:hip failure makes the HIP table unavailable, saying so") {
  fault::set_plan("dlopen:hip");
  auto hip = load_hip_symbols();
  fault::set_plan("");
  REQUIRE_FALSE(hip);
  CHECK(hip.error().code == Code::unavailable);
  CHECK(hip.error().message.find("injected fault at dlopen:hip") != std::string::npos);
}

TEST_CASE("the HIP table has every required entry point or is unavailable with the reason") {
  const Result<HipSymbols>& hip = hip_symbols();
  CHECK(&hip == &hip_symbols()); // loaded once
  if (!hip) {
    CHECK(hip.error().code == Code::unavailable);
    CHECK(hip.error().message.find("HIP runtime") != std::string::npos);
    return;
  }
#define KILN_HIP(name, params) CHECK_MESSAGE(bool(hip->name), #name);
#define KILN_HIP_TEXT(name, params)
#include "runtime/hip/hip_symbols.def"
#undef KILN_HIP_TEXT
#undef KILN_HIP
}
