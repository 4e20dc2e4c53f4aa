// Import validates a bundle whole before writing anything: every job's key
// recomputed from its components, every artifact present, every closure's
// key recomputed from its members (all present), every image checked as a
// loader would check it, every name pointing into the bundle.
#pragma once

#include "cache/store.h"

#include <kiln/result.hpp>

namespace kiln::runtime {

/// Problems are `corrupt`, naming the key and what is wrong.
Status validate_bundle(const cache::BundleData& data);

/// A stored job's key, recomputed from its stored components.
Result<Hash128> recompute_job_key(const cache::JobRecord& job);

} // namespace kiln::runtime
