// Unit tests for request memos in the cache (src/storage/local/request_memos.cpp):
// a memo round trips its roots and toolchain dependencies (names with tabs,
// newlines and NULs included), a later one replaces it, an absent one is
// not_found, and a damaged row is corrupt.
#include "fixtures/cache.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

Memo memo_of(std::vector<MemoRoot> roots, std::vector<MemoDep> deps) {
  Memo m;
  m.roots = std::move(roots);
  m.deps = std::move(deps);
  return m;
}

Memo get_ok(Store& store, const Hash128& key) {
  auto m = store.memos().get_memo(key);
  INFO((m ? std::string() : m.error().message));
  REQUIRE(m);
  return m.take();
}

void check_same(const Memo& got, const Memo& want) {
  REQUIRE(got.roots.size() == want.roots.size());
  for (size_t i = 0; i < got.roots.size(); ++i) {
    CAPTURE(i);
    CHECK(got.roots[i].name == want.roots[i].name);
    CHECK(got.roots[i].target == want.roots[i].target);
    CHECK(got.roots[i].closure == want.roots[i].closure);
  }
  CHECK(got.deps == want.deps);
}

void check_absent(Store& store, const Hash128& key) {
  auto m = store.memos().get_memo(key);
  REQUIRE_FALSE(m);
  CHECK(m.error().code == Code::not_found);
  CHECK(m.error().message.find(key.hex()) != std::string::npos);
}

} // namespace

TEST_CASE("request memos: put then get round trips roots and deps; absent is not_found") {
  TestCache c = open_cache();
  Hash128 key = hash128("request 1");
  check_absent(*c.store, key);

  Memo m = memo_of({{"saxpy", "sm_90", hash128("closure a")},
                    {"saxpy", "host", hash128("closure b")},
                    {"nest_a", "gfx942:xnack-", hash128("closure c")}},
                   {{"/opt/cuda/bin/ptxas", "123 456789"}, {"/opt/rocm/lib/ocml.bc", "missing"}});
  REQUIRE(c.store->memos().put_memo(key, m));
  check_same(get_ok(*c.store, key), m);
  // Another key is still a miss.
  check_absent(*c.store, hash128("request 2"));

  // A memo is its rows: one with no roots is not recorded (a request that
  // found nothing plans again).
  Hash128 empty_key = hash128("empty request");
  REQUIRE(c.store->memos().put_memo(empty_key, Memo{}));
  check_absent(*c.store, empty_key);

  // It is in the file, not only in this connection.
  c.open();
  check_same(get_ok(*c.store, key), m);
}

TEST_CASE("request memos: a later memo under the same key replaces the earlier one") {
  TestCache c = open_cache();
  Hash128 key = hash128("request");
  REQUIRE(c.store->memos().put_memo(
      key, memo_of({{"f", "host", hash128("old closure")}, {"g", "host", hash128("old g")}},
                   {{"dep", "1 2"}})));
  Memo newer = memo_of({{"f", "host", hash128("new closure")}}, {});
  REQUIRE(c.store->memos().put_memo(key, newer));
  check_same(get_ok(*c.store, key), newer);
}

TEST_CASE("request memos: names, targets and paths with tabs, newlines and NULs read back as "
          "written") {
  TestCache c = open_cache();
  Hash128 key = hash128("odd names");
  using namespace std::string_literals;
  Memo m = memo_of({{"a\tb", "host", hash128("c1")},
                    {"c\nd", "host", hash128("c2")},
                    {"x\ny", "sm_90", hash128("c3")},
                    {"nul\0inside"s, "host\tsm_90\n", hash128("c4")},
                    {"", "host", hash128("c5")},
                    {"3:ab,", "1:", hash128("c6")}},
                   {{"/opt/a\tb/ptxas\n", "1 2"}, {"/x\0y"s, "missing"}});
  REQUIRE(c.store->memos().put_memo(key, m));
  c.open();
  Memo got = get_ok(*c.store, key);
  check_same(got, m);
  CHECK(got.roots[3].name.size() == 10); // the NUL is kept
}

TEST_CASE("request memos: a malformed closure key is corrupt, naming the memo") {
  TestCache c = open_cache();
  Hash128 key = hash128("request");
  REQUIRE(c.store->memos().put_memo(
      key, memo_of({{"f", "host", hash128("c")}, {"g", "host", hash128("d")}}, {})));
  c.store.reset();
  // Fifteen bytes, seventeen, the old hex text, and NULL's neighbour, text.
  for (const std::string& bad : std::vector<std::string>{
           "x'00112233445566778899aabbccddee'", "x'00112233445566778899aabbccddeeff00'",
           "'" + hash128("d").hex() + "'", "'not a key'"}) {
    CAPTURE(bad);
    CHECK(raw_exec(c.path(), "UPDATE memo_rows SET closure_key = " + bad +
                                 " WHERE memo = (SELECT id FROM memos WHERE key = x'" + key.hex() +
                                 "') AND kind = 0 AND position = 1") == 1);
    auto s = open_store(c.path());
    auto m = s->memos().get_memo(key);
    REQUIRE_FALSE(m);
    CHECK(m.error().code == Code::corrupt);
    CHECK(m.error().message.find(key.hex()) != std::string::npos);
    CHECK(m.error().message.find("root 1") != std::string::npos);
  }
}

TEST_CASE("request memos: recorded again, a memo is replaced whole; one without roots is not "
          "recorded") {
  TestCache c = open_cache();
  Hash128 key = hash128("request");
  REQUIRE(c.store->memos().put_memo(
      key, memo_of({{"f", "host", hash128("c")}, {"g", "host", hash128("d")}},
                   {{"/a", "1"}, {"/b", "2"}})));
  REQUIRE(c.store->memos().put_memo(key, memo_of({{"h", "sm_90", hash128("e")}}, {{"/c", "3"}})));
  Memo got = get_ok(*c.store, key);
  REQUIRE(got.roots.size() == 1);
  CHECK(got.roots[0].name == "h");
  REQUIRE(got.deps.size() == 1);
  CHECK(got.deps[0].path == "/c");
  Hash128 empty = hash128("nothing");
  REQUIRE(c.store->memos().put_memo(empty, memo_of({}, {{"/a", "1"}})));
  auto none = c.store->memos().get_memo(empty);
  REQUIRE_FALSE(none);
  CHECK(none.error().code == Code::not_found);
}
