// Caches for the admin tests: hand-made records with known keys (two roots
// on the host, one of them with a deferred child, and a root for sm_90),
// opened through the public kiln::Cache the admin calls take.
#pragma once

#include "fixtures/cache.hpp"

#include <kiln/admin.hpp>
#include <kiln/kiln.h>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <string>
#include <utility>

namespace kiln::test {

/// Roots "alpha" (host: alpha → beta; and sm_90) and "gamma" (host), and a
/// job no closure holds.
struct AdminRecords {
  core::JobRecord alpha, beta, gamma, alpha_gpu, orphan;
  core::ClosureRecord alpha_closure, gamma_closure, gpu_closure;
};

inline AdminRecords put_admin_records(storage::Store& store) {
  AdminRecords p{consistent_job("alpha"),
                 consistent_job("beta"),
                 consistent_job("gamma"),
                 consistent_job("alpha", "sm_90"),
                 consistent_job("orphan"),
                 {},
                 {},
                 {}};
  REQUIRE(store.put_job(p.beta, {{"obj", "object of beta"}}, {}));
  REQUIRE(store.put_job(p.alpha, {{"obj", "object of alpha, longer"}},
                        {{p.beta.symbol, "beta"}}));
  REQUIRE(store.put_job(p.gamma, {{"obj", "object of gamma"}}, {}));
  REQUIRE(store.put_job(p.alpha_gpu, {{"cubin", "cubin of alpha"}, {"ptx", "// ptx of alpha"}},
                        {}));
  REQUIRE(store.put_job(p.orphan, {{"obj", "object of orphan"}}, {}));
  p.alpha_closure = closure_of(p.alpha, {p.beta});
  p.gamma_closure = closure_of(p.gamma);
  p.gpu_closure = closure_of(p.alpha_gpu);
  REQUIRE(store.put_closure(p.alpha_closure, {{"alpha", "host", p.alpha_closure.key}}));
  REQUIRE(store.put_closure(p.gamma_closure, {{"gamma", "host", p.gamma_closure.key}}));
  REQUIRE(store.put_closure(p.gpu_closure, {{"alpha", "sm_90", p.gpu_closure.key}}));
  return p;
}

/// A cache file holding put_admin_records' records; no store left open.
struct AdminCache {
  TestCache cache;
  AdminRecords records;
  std::string path() const { return cache.path(); }
};

inline AdminCache admin_cache(const std::string& prefix = "kiln-admin-test") {
  AdminCache a{open_cache(prefix), {}};
  a.records = put_admin_records(*a.cache.store);
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
