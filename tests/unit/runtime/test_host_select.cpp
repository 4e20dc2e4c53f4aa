// Unit tests for the host target (src/runtime/host/host_select.h).
#include "runtime/host/host_select.h"

#include <doctest/doctest.h>

using namespace kiln::runtime;

TEST_CASE("the host's target is \"host\", chosen only when the cache has a host build") {
  auto spec = host_device_target();
  REQUIRE(spec);
  CHECK(*spec == "host");
  auto have = choose_host_target({"sm_90", "host", "gfx942"});
  REQUIRE(have);
  CHECK(*have == "host");
  auto none = choose_host_target({"sm_90", "gfx942", "hostile"});
  REQUIRE(none);
  CHECK(none->empty());
}
