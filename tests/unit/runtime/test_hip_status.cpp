// Unit tests for HIP result text (src/runtime/hip/hip_status.h), the twin of
// test_cuda_status.cpp: HIP errors read like CUDA's.
#include "runtime/hip/hip_status.h"

#include <doctest/doctest.h>

using namespace kiln::runtime;

namespace {

// A stand-in for the runtime's error-text entry points, which return the
// text and name unknown codes "hipErrorUnknown".
const char* fake_name(int rc) { return rc == 500 ? "hipErrorNotFound" : "hipErrorUnknown"; }
const char* fake_string(int rc) { return rc == 500 ? "named symbol not found" : "unknown error"; }

} // namespace

TEST_CASE("HIP status text keeps the number and adds what the runtime knows") {
  CHECK(hip_status_text(500, "hipErrorNotFound", "named symbol not found") ==
        "HIP error 500 (hipErrorNotFound: named symbol not found)");
  CHECK(hip_status_text(999, nullptr, nullptr) == "HIP error 999");
  CHECK(hip_status_text(2, nullptr, "out of memory") == "HIP error 2 (out of memory)");
}

TEST_CASE("HIP results are described through the runtime's table, else by number") {
  HipSymbols hip;
  hip.hipGetErrorName = fake_name;
  hip.hipGetErrorString = fake_string;
  CHECK(hip_describe(hip, 500) == "HIP error 500 (hipErrorNotFound: named symbol not found)");
  CHECK(hip_describe(hip, 4242) == "HIP error 4242 (hipErrorUnknown: unknown error)");
  HipSymbols old; // a runtime without the error-text entry points
  CHECK(hip_describe(old, 500) == "HIP error 500");
}
