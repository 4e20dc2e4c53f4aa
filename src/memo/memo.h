// Request memos, the precompile's direct mode: a request (its inputs' bytes,
// entries, targets, options, this Kiln and LLVM, the host CPU, the toolchain
// files it used) is keyed as a whole; a repeated request is answered from the
// cache without parsing IR or loading LLVM. No LLVM here: kiln-precompile
// and a JIT's compile-or-load consult the memo before bringing in the
// compiler.
#pragma once

#include "storage/records.h"

#include <kiln/request.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kiln::memo {

/// The request's memo key; nullopt if it cannot be memoised (an input file
/// that cannot be read: the plan will report that properly).
std::optional<Hash128> memo_key(const CompileRequest& request);

/// A file's stamp, "size mtime_ns", or "missing": a memo records it for
/// each toolchain file and is a miss once one differs.
std::string file_stamp(const std::string& path);

/// A memo hit, read only: the report (every job cached, roots with their
/// closures; no image checked) and the roots' closures. nullopt on a miss.
struct MemoHit {
  CompileReport report;
  /// Parallel to report.roots; members only on the first root of each
  /// member set (Store::get_closures).
  std::vector<core::ClosureRecord> closures;
  /// For each root, the first root with the same member set.
  std::vector<size_t> first_of_set;
};
Result<std::optional<MemoHit>> memo_lookup(storage::Records& store, const Hash128& key);

/// The one root a memo names, when its toolchain files are unchanged:
/// nullopt on a miss, or when the memo names several roots. Nothing else is
/// read: the caller loads the root's closure, whose reading checks it.
Result<std::optional<storage::MemoRoot>> memo_single_root(storage::Records& store,
                                                          const Hash128& key);

/// A memo hit replayed: the report the request would produce (every job
/// cached), with its roots' names pointed at their closures, the closures
/// marked used, the counters and, when the request links images, every
/// root's image checked or linked. nullopt on a miss: no memo, a toolchain
/// file changed, or a closure was evicted.
Result<std::optional<CompileReport>> memo_replay(storage::Records& store, const Hash128& key,
                                                 const CompileRequest& request);

/// The memo's answer to a request against the cache at `cache_path`: the
/// replayed report on a hit; nullopt without a key, on a miss, or when the
/// cache does not exist yet (it is not created before the input is planned).
Result<std::optional<CompileReport>> memo_answer(const CompileRequest& request,
                                                 const std::string& cache_path,
                                                 const std::optional<Hash128>& key);

/// Records a successful request's roots and the toolchain files it used.
Status memo_record(storage::Records& store, const Hash128& key, const CompileReport& report,
                   const std::vector<std::string>& toolchain_files);

/// The unit a request's names come from, as a name records it: its input
/// names joined by ", ".
std::string unit_of(const CompileRequest& request);

/// The CPU this process runs on, as far as code generation for "host" can
/// tell: vendor, family, model and feature bits. Part of a memo key with a
/// host target, so a memo never hands one machine's code to another.
std::string host_cpu_identity();

} // namespace kiln::memo
