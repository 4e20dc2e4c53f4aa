// Verification of a whole cache, the one check behind `kiln-inspect verify`,
// kiln_cache_verify and kiln::Cache::verify: every stored blob against its
// checksum; every closure's members present, defining their symbols and
// leaving no open deferred symbol unresolved; every name's closure present;
// and, above the rows, every job's key recomputed from its stored components
// (core::job_key_of), every closure's key from its members
// (core::check_closure_key) and every image checked as a loader would
// (core::check_image).
#pragma once

#include <kiln/result.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace kiln::storage {

class Records;

/// One problem verify found: what kind of thing, its key, what is wrong.
struct Problem {
  std::string kind; ///< "dictionary", "artifact", "image", "closure", "job", "name", "cache"
  std::string key;
  std::string message;
};

/// Everything verify found, and how much it looked at.
struct VerifyReport {
  std::vector<Problem> problems; ///< row checks first, then keys, then images
  size_t jobs = 0;
  size_t closures = 0;

  bool ok() const { return problems.empty(); }
};

/// Verifies the whole cache. A problem is reported, not returned as an
/// error, SQLite finding the file damaged included (kind "cache"); an error
/// means the cache could not be read at all, and is never `corrupt`.
Result<VerifyReport> verify_cache(Records& store);

} // namespace kiln::storage
