// Unit tests for fault plans (src/support/fault.cpp): which call fails.
#include "support/fault.h"

#include <doctest/doctest.h>

using namespace kiln;

TEST_CASE("a fault plan fails exactly the calls it names") {
  fault::set_plan("file-write:2");
  CHECK(fault::planned("file-write"));
  CHECK_FALSE(fault::planned("sqlite-write"));
  CHECK_FALSE(fault::hit("file-write"));
  CHECK(fault::hit("file-write"));
  CHECK_FALSE(fault::hit("file-write"));
  CHECK_FALSE(fault::hit("sqlite-write"));

  fault::set_plan("link:host:2+,dlopen:cuda");
  CHECK_FALSE(fault::hit("link:host"));
  CHECK(fault::hit("link:host"));
  CHECK(fault::hit("link:host"));
  CHECK(fault::hit("dlopen:cuda"));
  CHECK(fault::hit("dlopen:cuda"));
  CHECK(fault::message("dlopen:cuda").find("dlopen:cuda") != std::string::npos);

  fault::set_plan("");
  CHECK_FALSE(fault::hit("dlopen:cuda"));
  CHECK_FALSE(fault::planned("dlopen:cuda"));
}
