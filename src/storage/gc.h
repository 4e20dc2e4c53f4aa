// Eviction: the policy that says when gc evicts (a size target, an age
// limit, or both, and what it must keep), what one run evicted, and the
// policy read from a command line. The order is fixed whatever the policy:
// jobs no closure uses first (nothing can load them), then closures least
// recently used first, each with its images and names and the jobs no
// remaining closure uses; ties in one-second recency are broken by key, so
// every process evicts in the same order. A job a running precompile holds a
// lease on (Claims::lease_jobs), and a closure rooted at one, is never evicted.
#pragma once

#include "support/hash.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::storage {

class Records;

/// When gc evicts. A policy with no size target and no age limit evicts
/// nothing through Upkeep::gc; collect_garbage gives it the cache's limit.
struct GcPolicy {
  int64_t max_size = -1;   ///< evict until the live size is at most this; < 0: no size target
  int64_t older_than = -1; ///< evict closures unused for this many seconds; < 0: none
  bool dry_run = false;    ///< report, change nothing
  bool vacuum = true;      ///< rewrite the file to give space back (the CLI); else incremental
  std::vector<Hash128> keep; ///< never evicted (a precompile's own closures)

  bool has_limit() const { return max_size >= 0 || older_than >= 0; }
};

/// The name callers have always used for the policy.
using GcOptions = GcPolicy;

/// What one gc run evicted (or would have, on a dry run).
struct GcReport {
  std::vector<Hash128> evicted_closures; ///< least recently used first
  int64_t evicted_jobs = 0;
  int64_t evicted_images = 0;
  int64_t dropped_key_form_names = 0; ///< name and library rows of key form, never consulted
  int64_t bytes_before = 0; ///< live bytes
  int64_t bytes_after = 0;
};

/// A policy from command-line text: a size ("500M", support/units.h) and an
/// age ("30d"); empty text leaves that limit unset. Malformed text is
/// `invalid_argument`.
Result<GcPolicy> parse_gc_policy(const std::string& max_size, const std::string& older_than);

/// Runs gc per `policy`; a policy without limits is given the cache's own
/// size limit (Upkeep::max_size) first.
Result<GcReport> collect_garbage(Records& store, GcPolicy policy);

} // namespace kiln::storage
