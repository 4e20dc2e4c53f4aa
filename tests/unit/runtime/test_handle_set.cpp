// Unit tests for the registry of live handles (src/runtime/handle_set.h): a
// handle is live from add to take, and only one take of it succeeds; a
// pointer never added is not live; tombstones are reused and cleared; a
// full table sends handles to the overflow set and back; and a lookup run
// while other handles come and go never misses a live one.
#include "runtime/handle_set.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <vector>

using kiln::runtime::HandleSet;

namespace {

// Addresses are only compared, never followed: any aligned value will do.
const void* fake(uintptr_t i) { return reinterpret_cast<const void*>(0x10000 + i * 16); }

} // namespace

TEST_CASE("handle_set: live from add to take, and taken once") {
  static HandleSet<16> set;
  CHECK_FALSE(set.contains(nullptr));
  CHECK_FALSE(set.contains(reinterpret_cast<const void*>(1)));
  CHECK_FALSE(set.contains(fake(1)));
  set.add(fake(1));
  CHECK(set.contains(fake(1)));
  CHECK_FALSE(set.contains(fake(2)));
  CHECK(set.take(fake(1)));
  CHECK_FALSE(set.contains(fake(1)));
  CHECK_FALSE(set.take(fake(1)));
  CHECK_FALSE(set.take(nullptr));
  CHECK_FALSE(set.take(fake(3)));
}

TEST_CASE("handle_set: a full table overflows, and every handle stays findable") {
  static HandleSet<8> set; // six slots in use before handles overflow
  for (uintptr_t i = 0; i < 40; ++i)
    set.add(fake(i));
  for (uintptr_t i = 0; i < 40; ++i)
    CHECK(set.contains(fake(i)));
  CHECK_FALSE(set.contains(fake(40)));
  for (uintptr_t i = 0; i < 40; i += 2)
    CHECK(set.take(fake(i)));
  for (uintptr_t i = 0; i < 40; ++i)
    CHECK(set.contains(fake(i)) == (i % 2 == 1));
  for (uintptr_t i = 1; i < 40; i += 2)
    CHECK(set.take(fake(i)));
  for (uintptr_t i = 0; i < 40; ++i)
    CHECK_FALSE(set.contains(fake(i)));
  // Emptied, the table takes handles again.
  set.add(fake(7));
  CHECK(set.contains(fake(7)));
  CHECK(set.take(fake(7)));
}

TEST_CASE("handle_set: random adds and takes agree with a model") {
  static HandleSet<64> set;
  std::set<uintptr_t> model;
  std::mt19937 rng(7);
  for (int step = 0; step < 200000; ++step) {
    uintptr_t i = rng() % 100;
    if (model.count(i)) {
      REQUIRE(set.take(fake(i)));
      model.erase(i);
    } else if (rng() % 2) {
      set.add(fake(i));
      model.insert(i);
    } else {
      REQUIRE_FALSE(set.take(fake(i)));
    }
    uintptr_t probe = rng() % 100;
    REQUIRE(set.contains(fake(probe)) == (model.count(probe) != 0));
  }
}

TEST_CASE("handle_set: lookups while other handles come and go never miss a live one") {
  static HandleSet<32> set;
  for (uintptr_t i = 0; i < 8; ++i)
    set.add(fake(i)); // live throughout
  std::atomic<bool> stop{false};
  std::atomic<long> misses{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed))
        for (uintptr_t i = 0; i < 8; ++i)
          if (!set.contains(fake(i)))
            misses.fetch_add(1);
    });
  // Churn enough to fill the table with tombstones and overflow it.
  std::mt19937 rng(11);
  std::vector<uintptr_t> churn;
  for (int step = 0; step < 100000; ++step) {
    if (churn.size() < 40 && rng() % 2) {
      uintptr_t v = 1000 + rng() % 10000;
      if (!set.contains(fake(v))) {
        set.add(fake(v));
        churn.push_back(v);
      }
    } else if (!churn.empty()) {
      size_t k = rng() % churn.size();
      REQUIRE(set.take(fake(churn[k])));
      churn[k] = churn.back();
      churn.pop_back();
    }
  }
  stop = true;
  for (std::thread& r : readers)
    r.join();
  CHECK(misses.load() == 0);
}
