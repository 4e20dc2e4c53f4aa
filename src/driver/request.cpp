// The one request path (driver/request.h).
#include "driver/request.h"

#include "codegen/isolated.h"
#include "driver/driver.h"
#include "memo/memo.h"
#include "storage/single_flight.h"
#include "storage/storage.h"

#include <cstdio>
#include <sys/stat.h>

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
  return report;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0;
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
  // The same request from several processes at once (a fleet's ranks): the
  // first claims its memo key and answers it; the others wait, and their
  // memo then answers them, with no plan of their own (single-flight on
  // the request, before single-flight on its jobs). Only over a cache that
  // exists: a path with no cache yet is planned first, so that bad input
  // creates none.
  std::unique_ptr<storage::Records> opened;
  storage::Records* store = where.open;
  if (key && !store && file_exists(where.path)) {
    auto o = storage::open_records(where.path);
    if (o) {
      opened = o.take();
      store = opened.get();
    }
  }
  if (!key || !store || store->read_only())
    return plan_run_record(request, where, key);
  const Where here{where.path, store};
  auto local = storage::Storage::over(*store, {});
  if (!local)
    return plan_run_record(request, here, key);
  std::optional<Result<CompileReport>> out;
  storage::FlightCalls calls;
  calls.ready = [&](size_t) -> Result<bool> {
    KILN_TRY_ASSIGN(auto hit, memo(request, here, key));
    if (hit)
      out = std::move(*hit);
    return out.has_value();
  };
  calls.work = [&](size_t) { out = plan_run_record(request, here, key); };
  calls.theirs = [](size_t, double) {};
  calls.looked = true; // the memo just missed
  calls.waiting = [&](const std::vector<storage::FlightWait>& waits) {
    if (request.progress && !waits.empty()) {
      char how_long[32];
      std::snprintf(how_long, sizeof how_long, "%.1f s", waits.front().seconds);
      request.progress({0, 0, "", "", "waiting for " + waits.front().holder + ", " + how_long +
                                          " (the same request)"});
    }
  };
  const std::vector<Hash128> claim{
      hash128(std::string("kiln request claim") + '\0' + key->hex())};
  if (Status s = storage::single_flight(**local, claim, calls, storage::flight_options(1)); !s)
    return plan_run_record(request, here, key);
  if (!out) // answered by another whose memo was not recorded: plan here
    return plan_run_record(request, here, key);
  return std::move(*out);
}

} // namespace kiln::request

namespace kiln {

Result<CompileReport> compile(const CompileRequest& request, const std::string& cache_path) {
  return request::answer(request, {cache_path, nullptr});
}

} // namespace kiln
