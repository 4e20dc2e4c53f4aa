// Caches for the admin tests: fixtures/populated.hpp's records, opened
// through the public kiln::Cache the admin calls take.
#pragma once

#include "fixtures/cache.hpp"
#include "fixtures/populated.hpp"

#include <kiln/admin.hpp>
#include <kiln/kiln.h>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <string>
#include <utility>

namespace kiln::test {

/// A cache file holding populate's records (fixtures/populated.hpp); no
/// store left open.
struct AdminCache {
  TestCache cache;
  Populated records;
  std::string path() const { return cache.path(); }
};

inline AdminCache admin_cache(const std::string& prefix = "kiln-admin-test") {
  AdminCache a{open_cache(prefix), {}};
  a.records = populate(*a.cache.store);
  a.cache.store.reset();
  return a;
}

/// The cache at `path` through the public API; REQUIREs that it opens.
inline Cache open_api(const std::string& path, unsigned flags = 0) {
  auto c = Cache::open(path, flags | KILN_CACHE_LOCAL_ONLY);
  INFO((c ? std::string() : c.error().message));
  REQUIRE(c);
  return c.take();
}

/// The value of an admin call; REQUIREs that it succeeded.
template <class T> T admin_ok(Result<T> r) {
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  return r.take();
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace kiln::test
