// One request path. Every way a compile is asked for -- kiln-precompile and
// compile_on_demand (through the compiler plugin's entry), the C API, the
// C++ API, Python and compile-or-load -- is answered by answer() here, in
// named stages that a test can drive one at a time:
//
//   memo   -> the request memo answers a request seen before, without LLVM
//   plan   -> the unit read and every job keyed (bad input touches no cache)
//   run    -> claim, compile, record (plan.cpp over storage/single_flight.h)
//   record -> the request memoised for the next time
//   report -> the report (CompileReport::first_failure: its first failure as an
//             error, for the callers that want one)
#pragma once

#include "storage/records.h"

#include <kiln/compiler.hpp>

#include <optional>
#include <string>

namespace kiln::request {

/// The cache a request is answered over: a path, opened after planning (so
/// that bad input creates no cache), or records the caller holds open.
struct Where {
  std::string path;
  storage::Records* open = nullptr;
};

/// What the caller has done already.
struct Asked {
  /// The memo was asked and missed (libkiln's compile_on_demand): not
  /// looked up a second time, but still recorded.
  bool memo_missed = false;
};

/// memo: the memo's answer, if the request has a key and the cache holds it.
Result<std::optional<CompileReport>> memo(const CompileRequest& request, const Where& where,
                                          const std::optional<Hash128>& key);

/// plan: the request planned; a code generation worker is started first, so
/// that loading LLVM overlaps the reading and planning.
Result<Plan> plan(const CompileRequest& request);

/// run: the plan run over open records with the request's remote tier.
/// Nothing is compiled into a read-only cache.
Result<CompileReport> run(Plan& plan, storage::Records& store);

/// record: the request memoised under `key` (an optimisation: a failure to
/// record is not the request's).
void record(storage::Records& store, const std::optional<Hash128>& key, const Plan& plan,
            const CompileReport& report);

/// The whole path: memo, plan, run, record.
Result<CompileReport> answer(const CompileRequest& request, const Where& where,
                             const Asked& asked = {});

} // namespace kiln::request
