// Unit tests for human units (src/support/units.cpp): sizes and durations.
#include "support/units.h"

#include <doctest/doctest.h>

using namespace kiln;

TEST_CASE("parse_size: binary multiples, optional B/iB") {
  CHECK(*parse_size("0") == 0);
  CHECK(*parse_size("100") == 100);
  CHECK(*parse_size("64K") == 65536);
  CHECK(*parse_size("64KiB") == 65536);
  CHECK(*parse_size("2M") == 2 * 1024 * 1024);
  CHECK(*parse_size("1.5G") == int64_t(3) << 29);
  for (const char* bad : {"", "K", "-1", "12Q", "1..5G", "99999999999999999999G"}) {
    auto r = parse_size(bad);
    CHECK_MESSAGE(!r, bad);
    if (!r)
      CHECK(r.error().code == Code::invalid_argument);
  }
}

TEST_CASE("parse_duration: s, m, h, d, w; a bare number is seconds") {
  CHECK(*parse_duration("30") == 30);
  CHECK(*parse_duration("30s") == 30);
  CHECK(*parse_duration("2m") == 120);
  CHECK(*parse_duration("3h") == 3 * 3600);
  CHECK(*parse_duration("7d") == 7 * 86400);
  CHECK(*parse_duration("1w") == 7 * 86400);
  CHECK_FALSE(parse_duration("soon"));
  CHECK_FALSE(parse_duration("5y"));
}

TEST_CASE("human_size names the unit") {
  CHECK(human_size(512).find("B") != std::string::npos);
  CHECK(human_size(int64_t(3) << 20).find("MiB") != std::string::npos);
}
