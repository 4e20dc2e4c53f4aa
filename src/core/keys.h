// Every key Kiln computes, in one place: jobs, deferred symbols, closures,
// images and request memos. Each is XXH3-128 over a canonical cereal
// serialization (portable binary: byte order fixed) of exactly the things
// that determine the content. Never a pointer, counter, path or time.
#pragma once

#include "core/data_model.h"
#include "core/target.h"
#include "support/hash.h"

#include <kiln/result.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::core {

/// Bumped whenever the meaning of a key's components changes.
inline constexpr int kKeyFormat = 1;

/// What identifies a job independent of its body: the deferred symbol a
/// parent uses for it is derived from this, so a child's body can change
/// without recompiling its parents.
struct JobIdentity {
  std::string entry;
  TargetDesc target;
  CodegenOptions options;
};

/// "__kiln_deferred_" + 32 hex digits: a valid identifier on every target
/// (PTX names may not contain dots).
std::string deferred_symbol(const JobIdentity& id);

/// The symbol a job's entry is known by in its code, its image and its
/// closure. A GPU kernel keeps its source (mangled) name, so that
/// cuModuleGetFunction / hipModuleGetFunction and profilers see the name the
/// program used; a kernel name is unique within a unit, and a closure holds
/// one unit's jobs. Everything else gets deferred_symbol(id).
std::string job_symbol(const JobIdentity& id, bool kernel);

/// A deferred symbol's 32 digits as their 16 bytes, for storing it: only
/// one exactly as deferred_symbol writes it (lowercase digits), so that
/// unpack_deferred_symbol gives back the same text; empty for any other.
std::string pack_deferred_symbol(std::string_view symbol);
/// The deferred symbol whose digits are `bytes` (16 of them).
std::string unpack_deferred_symbol(std::string_view bytes);

/// True if `symbol` is one job_symbol can give the job (for records that
/// arrive from elsewhere: bundles, the remote tier).
bool is_job_symbol(const JobIdentity& id, const std::string& symbol);

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

/// A member set's key: XXH3-128 over its (symbol, job) pairs in symbol
/// order, each symbol length-prefixed. Closures with the same members (the
/// roots of one deferred cycle, each reaching all of it) have one key:
/// storage keeps their members once and links one image for them all. Job
/// keys name their target, so one set is for one target.
Hash128 member_set_key(ClosureMap members);
Hash128 member_set_key(const std::vector<ClosureMember>& members);

/// A library's closure: every member of `roots` (closures of one target,
/// members' entries filled) once, rooted at the root job of the closure
/// with the smallest key, keyed by closure_key: the same roots give the
/// same closure in any order, and one whose members change gives another.
/// Two roots that bring different jobs under one symbol (two units that
/// each define a kernel of that name) are `invalid_argument`, naming both.
Result<ClosureRecord> library_closure(const std::vector<ClosureRecord>& roots);

/// The key components as a cache stores them (target spec and resolved
/// triple/cpu/features, canonical options "-O2 -g", toolchain): so a stored
/// job's key can be recomputed (verify, import) and compared (explain).
/// Malformed options are `corrupt`.
Result<KeyComponents> components_of(const std::string& module_hash_hex, const std::string& entry,
                                    const std::string& target, const std::string& triple,
                                    const std::string& cpu, const std::string& features,
                                    const std::string& options, const std::string& toolchain);

/// A stored job's key, recomputed from its stored components (verify,
/// import, the remote tier). Malformed components are `corrupt`.
Result<Hash128> job_key_of(const JobRecord& job);

/// What an image is stored under: its closure, the device architecture it
/// was made for (image_arch) and the fingerprint of the linker that made it.
inline ImageKey image_key(const Hash128& closure, std::string arch, std::string linker) {
  return {closure, std::move(arch), std::move(linker)};
}

/// Bumped whenever what a request memo's key covers changes.
inline constexpr int kMemoFormat = 1;

/// What a request memo is keyed by, each part already canonical; the memo
/// layer assembles them from a request (memo/memo.h).
struct MemoKeyParts {
  std::string kiln_version;
  std::string llvm_version;
  std::vector<std::string> inputs; ///< hex hashes of the input files' bytes
  std::vector<std::string> entries;
  std::vector<std::string> targets;
  int opt_level = 2;
  bool debug = false;
  std::string host_cpu;                   ///< empty unless a target is "host"
  std::vector<std::string> toolchain_env; ///< variables that pick device toolchains
};
Hash128 memo_key(const MemoKeyParts& p);

} // namespace kiln::core
