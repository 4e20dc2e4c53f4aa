// Unit tests for request memos in the cache (src/storage/local/request_memos.cpp):
// a memo round trips its roots and toolchain dependencies, a later one
// replaces it, an absent one is not_found, what cannot be written unambiguously
// is not memoised, and a damaged row is corrupt.
#include "fixtures/cache.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

Store::Memo memo_of(std::vector<Store::MemoRoot> roots, std::vector<std::string> deps) {
  Store::Memo m;
  m.roots = std::move(roots);
  m.deps = std::move(deps);
  return m;
}

Store::Memo get_ok(Store& store, const Hash128& key) {
  auto m = store.get_memo(key);
  INFO((m ? std::string() : m.error().message));
  REQUIRE(m);
  return m.take();
}

void check_same(const Store::Memo& got, const Store::Memo& want) {
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
  auto m = store.get_memo(key);
  REQUIRE_FALSE(m);
  CHECK(m.error().code == Code::not_found);
  CHECK(m.error().message.find(key.hex()) != std::string::npos);
}

} // namespace

TEST_CASE("request memos: put then get round trips roots and deps; absent is not_found") {
  TestCache c = open_cache();
  Hash128 key = hash128("request 1");
  check_absent(*c.store, key);

  Store::Memo m = memo_of({{"saxpy", "sm_90", hash128("closure a")},
                           {"saxpy", "host", hash128("closure b")},
                           {"nest_a", "gfx942:xnack-", hash128("closure c")}},
                          {"/opt/cuda/bin/ptxas\t123\t456789", "/opt/rocm/lib/ocml.bc\tmissing"});
  REQUIRE(c.store->put_memo(key, m));
  check_same(get_ok(*c.store, key), m);
  // Another key is still a miss.
  check_absent(*c.store, hash128("request 2"));

  // A memo with no roots and no deps is still a memo.
  Hash128 empty_key = hash128("empty request");
  REQUIRE(c.store->put_memo(empty_key, Store::Memo{}));
  Store::Memo empty = get_ok(*c.store, empty_key);
  CHECK(empty.roots.empty());
  CHECK(empty.deps.empty());

  // It is in the file, not only in this connection.
  c.open();
  check_same(get_ok(*c.store, key), m);
}

TEST_CASE("request memos: a later memo under the same key replaces the earlier one") {
  TestCache c = open_cache();
  Hash128 key = hash128("request");
  REQUIRE(c.store->put_memo(key, memo_of({{"f", "host", hash128("old closure")},
                                          {"g", "host", hash128("old g")}},
                                         {"dep\t1\t2"})));
  Store::Memo newer = memo_of({{"f", "host", hash128("new closure")}}, {});
  REQUIRE(c.store->put_memo(key, newer));
  check_same(get_ok(*c.store, key), newer);
}

TEST_CASE("request memos: names or deps that would not read back are not memoised") {
  TestCache c = open_cache();
  Hash128 tab = hash128("tab in a name");
  REQUIRE(c.store->put_memo(tab, memo_of({{"odd\tname", "host", hash128("c")}}, {})));
  check_absent(*c.store, tab);
  Hash128 newline = hash128("newline in a target");
  REQUIRE(c.store->put_memo(newline, memo_of({{"f", "host\nsm_90", hash128("c")}}, {})));
  check_absent(*c.store, newline);
  Hash128 dep = hash128("newline in a dep");
  REQUIRE(c.store->put_memo(dep, memo_of({{"f", "host", hash128("c")}}, {"a\nb"})));
  check_absent(*c.store, dep);

  // Refusing one does not disturb an earlier memo under that key.
  Store::Memo good = memo_of({{"f", "host", hash128("c")}}, {"dep\t1\t2"});
  REQUIRE(c.store->put_memo(dep, good));
  REQUIRE(c.store->put_memo(dep, memo_of({{"f\tg", "host", hash128("c")}}, {})));
  check_same(get_ok(*c.store, dep), good);
}

TEST_CASE("request memos: a malformed root line is corrupt, naming the memo") {
  TestCache c = open_cache();
  Hash128 key = hash128("request");
  REQUIRE(c.store->put_memo(key, memo_of({{"f", "host", hash128("c")}}, {})));
  c.store.reset();
  for (const char* roots : {"f\thost\tnot-a-key\n", "f without tabs\n", "f\thost\n"}) {
    CAPTURE(roots);
    CHECK(raw_exec(c.path(), "UPDATE memos SET roots = '" + std::string(roots) +
                                 "' WHERE key = '" + key.hex() + "'") == 1);
    auto s = open_store(c.path());
    auto m = s->get_memo(key);
    REQUIRE_FALSE(m);
    CHECK(m.error().code == Code::corrupt);
    CHECK(m.error().message.find(key.hex()) != std::string::npos);
  }
}
