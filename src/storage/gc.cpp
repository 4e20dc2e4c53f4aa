// Eviction as the layers above ask for it: the policy read from
// command-line text, and a gc that applies the cache's own size limit when
// the policy sets none. Each store evicts in its own way (Store::gc).
#include "storage/gc.h"

#include "storage/records.h"

#include "support/units.h"

namespace kiln::storage {

Result<GcPolicy> parse_gc_policy(const std::string& max_size, const std::string& older_than) {
  GcPolicy p;
  if (!max_size.empty()) {
    KILN_TRY_ASSIGN(auto v, parse_size(max_size));
    p.max_size = v;
  }
  if (!older_than.empty()) {
    KILN_TRY_ASSIGN(auto v, parse_duration(older_than));
    p.older_than = v;
  }
  return p;
}

Result<GcReport> collect_garbage(Records& store, GcPolicy policy) {
  if (!policy.has_limit()) {
    KILN_TRY_ASSIGN(auto limit, store.upkeep().max_size());
    policy.max_size = limit;
  }
  return store.upkeep().gc(policy);
}

} // namespace kiln::storage
