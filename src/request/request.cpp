// The one request path (request/request.h).
#include "request/request.h"

#include "codegen/worker/pool.h"
#include "request/plan.h"
#include "memo/memo.h"
#include "storage/storage.h"


namespace kiln::request {

Result<std::optional<CompileReport>> memo(const CompileRequest& request, const Where& where,
                                          const std::optional<Hash128>& key) {
  if (!key)
    return std::optional<CompileReport>();
  if (where.open)
    return memo::memo_replay(*where.open, *key, request);
  return memo::memo_answer(request, where.path, key);
}

Result<Plan> plan(const CompileRequest& request) {
  // A memo miss compiles (almost always): a code generation worker starts
  // now, its start (loading LLVM) overlapping the reading, planning and
  // lookups, rather than after them.
  codegen::prestart_workers(1);
  return Plan::create(request);
}

Result<CompileReport> run(Plan& plan, storage::Records& store) {
  const CompileRequest& request = driver::request_of(plan);
  KILN_TRY_ASSIGN(auto remote,
                  storage::remote::configured(request.remote, request.remote_read_only));
  // Nothing is compiled for a cache that cannot take it.
  if (store.read_only())
    return store.read_only_error("compile into it");
  // Whoever compiles into a cache writes to it: it closes as a writer.
  store.end_deferral();
  KILN_TRY_ASSIGN(auto cache, storage::Storage::over(store, std::move(remote)));
  return driver::run_plan(plan, *cache);
}

void record(storage::Records& store, const std::optional<Hash128>& key, const Plan& plan,
            const CompileReport& report) {
  if (key)
    (void)memo::memo_record(store, *key, report, plan.toolchain_files());
}

namespace {

// plan, run and record, over the records at `where` (opened after the plan
// when only a path is given: bad input creates no cache).
Result<CompileReport> plan_run_record(const CompileRequest& request, const Where& where,
                                      const std::optional<Hash128>& key) {
  KILN_TRY_ASSIGN(auto planned, plan(request));
  std::unique_ptr<storage::Records> opened;
  storage::Records* store = where.open;
  if (!store) {
    KILN_TRY_ASSIGN(opened, storage::open_records(where.path));
    store = opened.get();
  }
  auto report = run(planned, *store);
  if (report)
    record(*store, key, planned, *report);
  // What closing owes the file (compaction, published host images) is an
  // optimisation: its failure leaves the cache sound, so it warns.
  if (opened)
    if (Status closed = opened->close(); !closed && report)
      report->warnings.push_back(closed.error().message);
  return report;
}

} // namespace

Result<CompileReport> answer(const CompileRequest& request, const Where& where,
                             const Asked& asked) {
  // A bad remote URL is the request's error even where the memo answers.
  KILN_TRY(storage::remote::configured(request.remote, request.remote_read_only));
  // No key for a sharded run (its report is partial) or one that publishes
  // to a shared tier: those always go through the plan.
  const std::optional<Hash128> key = memo::memo_key(request);
  if (!asked.memo_missed) {
    KILN_TRY_ASSIGN(auto hit, memo(request, where, key));
    if (hit)
      return std::move(*hit);
  }
  return plan_run_record(request, where, key);
}

} // namespace kiln::request

namespace kiln {

Result<CompileReport> compile(const CompileRequest& request, const std::string& cache_path) {
  return request::answer(request, {cache_path, nullptr});
}

} // namespace kiln
