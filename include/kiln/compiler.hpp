// Kiln's compiler C++ API (libkiln-compiler, which links LLVM): ingest a
// unit, plan its job graph, compile what the cache lacks, record closures
// and link images. The loader (kiln.hpp) needs none of this; the request and
// report types, and compile_on_demand, are libkiln's (request.hpp).
//
// The one call most front ends want is kiln::compile(request, cache): a
// request seen before (same input bytes, entries, targets, options,
// toolchain, host CPU) is answered from the cache's memo without parsing IR;
// otherwise it is planned and run, and memoised. kiln::compile_on_demand is
// the same for a process that links only libkiln: LLVM is loaded on a miss.
#pragma once

#include <kiln/request.hpp>
#include <kiln/result.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// Compile-or-hit: the request memo first, else Plan::create + run (input
/// errors are `invalid_argument`, and a cache that does not exist yet is not
/// created for them), then the request is memoised. Thread-safe.
Result<CompileReport> compile(const CompileRequest& request, const std::string& cache_path);

/// A planned compilation: the unit ingested, every job discovered and keyed.
/// Planning touches no cache, so bad input never changes one.
class Plan {
public:
  /// Input errors (syntax, missing entry, unknown target, bad
  /// kiln_deferred) are `invalid_argument` with file/line or entry context.
  static Result<Plan> create(const CompileRequest& request);
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  ~Plan();

  /// Number of distinct jobs over all targets.
  size_t job_count() const;

  /// Compiles the jobs the cache at `cache_path` lacks, stores each in its
  /// own transaction, records closures and names, links images. A failed
  /// job is reported in its JobReport; the others are still stored.
  Result<CompileReport> run(const std::string& cache_path);

  /// Key reports without compiling (status reflects nothing yet).
  CompileReport describe() const;

  /// The toolchain files (ptxas, device libraries) this plan's targets use:
  /// a memo of the request is invalid once one of them changes.
  std::vector<std::string> toolchain_files() const;

  struct Impl;

private:
  friend Result<CompileReport> compile(const CompileRequest&, const std::string&);
  friend struct PlanAccess; ///< the library's own entry points (not part of the API)
  explicit Plan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln
