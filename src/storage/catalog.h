// What a cache holds, as the read commands show it: listings filtered by
// target or root name, one job or root found by key or name, a root's
// deferred graph, a job's artifact by format, and why two jobs' keys differ.
// Reads only.
#pragma once

#include "core/explain.h"
#include "storage/records.h"

#include <kiln/result.hpp>

#include <string>
#include <variant>
#include <vector>

namespace kiln::storage {

/// Which jobs and names a listing keeps; empty fields keep everything.
struct ListFilter {
  std::string target;    ///< that target's jobs and names
  std::string name_glob; ///< names matching this fnmatch glob, and the jobs their closures hold
};

/// A listed job. Its artifacts and refs are read separately, and either may
/// fail on a damaged file while the rest of the listing stands.
struct ListedJob {
  JobRecord record;
  Result<std::vector<ArtifactInfo>> artifacts;
  Result<std::vector<JobRef>> refs;
};

struct Listing {
  std::vector<ListedJob> jobs;   ///< by target, entry, key
  std::vector<NameRecord> names; ///< by name, then target
};

/// The jobs and root names `filter` keeps.
Result<Listing> list_cache(Records& store, const ListFilter& filter);

/// One job with its artifacts and open deferred references.
struct JobDetail {
  JobRecord record;
  std::vector<ArtifactInfo> artifacts;
  std::vector<JobRef> refs;
};

Result<JobDetail> job_detail(Records& store, const JobRecord& job);

/// A root: the closure a name points at (name empty when found by key).
struct RootDetail {
  std::string name;
  std::string target;
  ClosureRecord closure;
  std::string unit; ///< input file names the name came from; empty if unknown
};

/// A key-form string (32 hex digits, either case): the job, else the closure
/// of that key, never a name; any other string: the root of that name for
/// `target` (empty: its first target). Nothing by that key or name is
/// `not_found`.
Result<std::variant<JobDetail, RootDetail>> find_entry(Records& store, const std::string& what,
                                                       const std::string& target);

/// A 32-hex closure key as itself (never read as a name), else the closure a
/// root name names for `target` (empty: its first target).
Result<Hash128> resolve_closure(Records& store, const std::string& what, const std::string& target);

/// A closure's members as nodes and their deferred references as edges.
struct ClosureGraph {
  struct Edge {
    Hash128 from;
    Hash128 to;
    std::string symbol; ///< the deferred symbol `to` defines
  };
  ClosureRecord closure;
  std::vector<Edge> edges; ///< by member, then by reference
};

/// The deferred graph of the closure resolve_closure(what, target) names.
Result<ClosureGraph> closure_graph(Records& store, const std::string& what,
                                   const std::string& target);

/// The raw bytes of a job's artifact in a format a user names: "ptx",
/// "bitcode" (bc) or "object" (a host object or a cubin).
Result<std::string> dump_artifact(Records& store, const std::string& job_key,
                                  const std::string& format);

/// Which key components of two stored jobs differ: why one missed where
/// the other would have hit.
Result<std::vector<core::KeyDifference>> explain_keys(Records& store, const Hash128& a,
                                                      const Hash128& b);

} // namespace kiln::storage
