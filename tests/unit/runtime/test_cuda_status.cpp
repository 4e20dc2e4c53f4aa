// Unit tests for CUDA result text (src/runtime/cuda/cuda_status.h): the
// number always, the driver's name and description when it knows the code.
#include "runtime/cuda/cuda_status.h"

#include <doctest/doctest.h>

using namespace kiln::runtime;

namespace {

// A stand-in for the driver's error-text entry points: knows 500 only, and
// answers other codes as the driver does (CUDA_ERROR_INVALID_VALUE, no text).
int fake_name(int rc, const char** s) {
  if (rc != 500)
    return 1;
  *s = "CUDA_ERROR_NOT_FOUND";
  return 0;
}
int fake_string(int rc, const char** s) {
  if (rc != 500)
    return 1;
  *s = "named symbol not found";
  return 0;
}

} // namespace

TEST_CASE("CUDA status text keeps the number and adds what the driver knows") {
  CHECK(cuda_status_text(500, "CUDA_ERROR_NOT_FOUND", "named symbol not found") ==
        "CUDA error 500 (CUDA_ERROR_NOT_FOUND: named symbol not found)");
  CHECK(cuda_status_text(999, nullptr, nullptr) == "CUDA error 999");
  CHECK(cuda_status_text(2, nullptr, "out of memory") == "CUDA error 2 (out of memory)");
  CHECK(cuda_status_text(2, "CUDA_ERROR_OUT_OF_MEMORY", nullptr) ==
        "CUDA error 2 (CUDA_ERROR_OUT_OF_MEMORY)");
}

TEST_CASE("CUDA results are described through the driver's table") {
  CudaSymbols cu;
  cu.cuGetErrorName = fake_name;
  cu.cuGetErrorString = fake_string;
  CHECK(cuda_describe(cu, 500) == "CUDA error 500 (CUDA_ERROR_NOT_FOUND: named symbol not found)");
  CHECK(cuda_describe(cu, 123456) == "CUDA error 123456");
  CudaSymbols empty; // a table that never loaded
  CHECK(cuda_describe(empty, 500) == "CUDA error 500");
}
