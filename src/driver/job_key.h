// Names for jobs, deferred symbols and closures: XXH3-128 over a canonical
// cereal serialization (portable binary: byte order fixed) of exactly the
// things that determine the code. Never a pointer, counter, path or time.
#pragma once

#include "codegen/target.h"
#include "support/hash.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln::driver {

/// Bumped whenever the meaning of a key's components changes.
inline constexpr int kKeyFormat = 1;

/// What identifies a job independent of its body: the deferred symbol a
/// parent uses for it is derived from this, so a child's body can change
/// without recompiling its parents.
struct JobIdentity {
  std::string entry;
  codegen::TargetDesc target;
  codegen::CodegenOptions options;
};

/// "__kiln_deferred_" + 32 hex digits: a valid identifier on every target
/// (PTX names may not contain dots).
std::string deferred_symbol(const JobIdentity& id);

/// The name a job's canonical module uses for a deferred child before
/// finishing: derived from the child's entry alone, so the module (and its
/// hash) does not change with the target or options, which the key holds
/// separately. Finishing renames it to the child's deferred_symbol.
std::string placeholder_symbol(const std::string& entry);

/// The key components, printable for "why did it miss?".
struct KeyComponents {
  Hash128 module_hash;
  JobIdentity identity;
  std::string toolchain;
};

Hash128 job_key(const KeyComponents& c);

using ClosureMap = std::vector<std::pair<std::string, Hash128>>; ///< symbol → job key

/// Hashes the root job and the sorted (symbol → job key) map.
Hash128 closure_key(const Hash128& root, ClosureMap members);

/// The key components as a cache stores them (target spec and resolved
/// triple/cpu/features, canonical options "-O2 -g", toolchain): so a stored
/// job's key can be recomputed (verify, import) and compared (explain).
/// Malformed options are `corrupt`.
Result<KeyComponents> components_of(const std::string& module_hash_hex, const std::string& entry,
                                    const std::string& target, const std::string& triple,
                                    const std::string& cpu, const std::string& features,
                                    const std::string& options, const std::string& toolchain);

} // namespace kiln::driver
