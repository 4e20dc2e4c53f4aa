#include "memo/memo.h"
#include "memo/library.h"
#include "memo/record.h"

#include "core/host_cpu.h"
#include "core/keys.h"
#include "core/target.h"
#include "image/image.h"
#include "storage/storage.h"
#include "support/files.h"
#include "support/parallel.h"


#include <cstdlib>
#include <mutex>
#include <unistd.h>
#include <ctime>
#include <thread>
#include <deque>
#include <map>
#include <set>
#include <sys/stat.h>


#ifndef KILN_VERSION
#error "KILN_VERSION must be defined"
#endif
#ifndef KILN_LLVM_VERSION
#error "KILN_LLVM_VERSION must name the LLVM libkiln-compiler is built with"
#endif


namespace kiln::memo {

std::string host_cpu_identity() { return core::this_host_cpu().identity; }

std::string unit_of(const CompileRequest& request) {
  std::string unit;
  for (const SourceInput& in : request.inputs)
    unit += (unit.empty() ? "" : ", ") + in.name;
  return unit;
}

std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return "missing";
  return std::to_string(st.st_size) + ' ' +
         std::to_string(int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
}

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(name) + "=" + v : std::string();
}

} // namespace

namespace {

bool publishes_to_remote(const CompileRequest& req) {
  auto remote = storage::remote::configured(req.remote, req.remote_read_only);
  // A bad URL is the request path's to report, so no memo answers it either.
  return !remote || (remote->backend && !remote->options.read_only);
}

} // namespace

std::optional<Hash128> memo_key(const CompileRequest& req) {
  // A sharded run's report is partial; a run that publishes to a shared tier
  // must go through the driver, which publishes what the tier lacks.
  if (req.shard_count > 1)
    return std::nullopt;
  if (publishes_to_remote(req))
    return std::nullopt;
  std::vector<std::string> inputs;
  for (const SourceInput& in : req.inputs) {
    if (in.in_memory) {
      inputs.push_back(hash128(in.bytes).hex());
      continue;
    }
    auto bytes = read_file(in.name);
    if (!bytes)
      return std::nullopt;
    inputs.push_back(hash128(*bytes).hex());
  }
  // No targets: the unit's own, which its bytes decide; keyed apart from
  // any explicit list, with the host's identity and the device toolchain.
  std::vector<std::string> targets =
      req.targets.empty() ? std::vector<std::string>{"(unit)"} : req.targets;
  bool host = req.targets.empty(), device = req.targets.empty();
  // Plain "host" is this machine's CPU (its identity joins the key); a
  // portable host:CPU target is the same code on every machine.
  for (const std::string& t : targets) {
    if (t == "host")
      host = true;
    else if (core::target_kind(t) != core::TargetKind::host)
      device = true;
  }
  // What picks the device toolchain; the files it picked are checked at hit
  // time against the memo's recorded identities.
  std::vector<std::string> toolchain_env;
  if (device)
    for (const char *v :
         {"KILN_PTXAS", "CUDA_HOME", "KILN_LIBDEVICE", "KILN_ROCM_DEVICE_LIBS", "PATH"})
      toolchain_env.push_back(env(v));
  core::MemoKeyParts parts{KILN_VERSION,
                           KILN_LLVM_VERSION,
                           std::move(inputs),
                           req.entries,
                           std::move(targets),
                           req.opt_level,
                           req.debug,
                           host ? host_cpu_identity() : std::string(),
                           std::move(toolchain_env)};
  return core::memo_key(parts);
}

Status memo_record(storage::Records& store, const Hash128& key, const CompileReport& report,
                   const std::vector<std::string>& toolchain_files) {
  if (!report.ok())
    return Status::ok();
  storage::Memo memo;
  for (const RootReport& r : report.roots) {
    auto k = parse_hash128(r.closure);
    if (!k)
      return Status::ok();
    memo.roots.push_back({r.name, r.target, *k});
  }
  for (const std::string& f : toolchain_files)
    memo.deps.push_back({f, file_stamp(f)});
  return store.memos().put_memo(key, memo);
}

Result<std::optional<storage::MemoRoot>> memo_single_root(storage::Records& store,
                                                          const Hash128& key) {
  using Miss = std::optional<storage::MemoRoot>;
  auto memo = store.memos().get_memo(key);
  if (!memo)
    return memo.error().code == Code::not_found ? Result<Miss>(Miss()) : memo.error();
  if (memo->roots.size() != 1)
    return Miss();
  for (const storage::MemoDep& dep : memo->deps)
    if (file_stamp(dep.path) != dep.stamp)
      return Miss(); // ptxas or a device library changed
  return Miss(std::move(memo->roots.front()));
}

Result<std::optional<MemoHit>> memo_lookup(storage::Records& store, const Hash128& key) {
  using Miss = std::optional<MemoHit>;
  auto memo = store.memos().get_memo(key);
  if (!memo)
    return memo.error().code == Code::not_found ? Result<Miss>(Miss()) : memo.error();
  for (const storage::MemoDep& dep : memo->deps)
    if (file_stamp(dep.path) != dep.stamp)
      return Miss(); // ptxas or a device library changed

  std::vector<Hash128> keys;
  for (const storage::MemoRoot& r : memo->roots)
    keys.push_back(r.closure);
  auto batch = store.closures().get_closures(keys);
  if (!batch)
    return batch.error().code == Code::not_found ? Result<Miss>(Miss()) : batch.error();
  std::vector<core::ClosureRecord>& closures = batch->closures;
  const std::vector<size_t>& first_of_set = batch->first_of_set;

  // Jobs in the order a plan discovers them: targets, then roots, then
  // breadth first through deferred references (sorted by symbol).
  MemoHit hit;
  CompileReport& rep = hit.report;
  rep.memo_hit = true;
  std::set<std::string> listed;
  // Roots that share a member set (a deferred cycle's) share its symbols:
  // each set is indexed once, and the jobs they reach are listed once.
  std::map<size_t, std::map<std::string, Hash128>> by_set;
  for (size_t i = 0; i < closures.size(); ++i) {
    auto [at, fresh] = by_set.try_emplace(first_of_set[i]);
    std::map<std::string, Hash128>& by_symbol = at->second;
    if (fresh)
      for (const core::ClosureMember& m : closures[i].members)
        by_symbol.emplace(m.symbol, m.job);
    std::deque<Hash128> work{closures[i].root_job};
    while (!work.empty()) {
      Hash128 k = work.front();
      work.pop_front();
      if (!listed.insert(k.hex()).second)
        continue;
      auto job = store.jobs().get_job(k);
      if (!job)
        return job.error().code == Code::not_found ? Result<Miss>(Miss()) : job.error();
      KILN_TRY_ASSIGN(auto refs, store.jobs().job_refs(k));
      JobReport r;
      r.key = k.hex();
      r.entry = job->entry;
      r.target = job->target;
      r.symbol = job->symbol;
      r.triple = job->triple;
      r.cpu = job->cpu;
      r.features = job->features;
      r.options = job->options;
      r.module_hash = job->module_hash.hex();
      r.toolchain = job->toolchain;
      r.status = JobStatus::cached;
      for (const core::JobRef& ref : refs) {
        auto child = by_symbol.find(ref.symbol);
        if (child == by_symbol.end())
          return Miss(); // not this closure's shape: let the plan decide
        r.refs.emplace_back(ref.symbol, child->second.hex());
        work.push_back(child->second);
      }
      rep.jobs.push_back(std::move(r));
    }
  }
  for (size_t i = 0; i < closures.size(); ++i) {
    RootReport rr;
    rr.name = memo->roots[i].name;
    rr.target = memo->roots[i].target;
    rr.closure = memo->roots[i].closure.hex();
    rep.roots.push_back(std::move(rr));
  }
  hit.closures = std::move(closures);
  hit.first_of_set = first_of_set;
  return Result<Miss>(Miss(std::move(hit)));
}

Result<std::optional<CompileReport>> memo_replay(storage::Records& store, const Hash128& key,
                                                 const CompileRequest& req) {
  using Miss = std::optional<CompileReport>;
  KILN_TRY_ASSIGN(auto found, memo_lookup(store, key));
  if (!found)
    return Miss();
  CompileReport &rep = found->report;
  const std::vector<core::ClosureRecord>& closures = found->closures;
  // The names now point at these closures, as a precompile leaves them.
  const std::string unit = unit_of(req);
  std::vector<Hash128> used;
  storage::Storage local(store); // a memo is answered from the local cache alone
  // A library first: its image serves its roots (as the precompile links
  // it), and is read and checked once, not once per root.
  std::set<std::string> served; ///< targets whose library has its image
  if (!req.library.empty()) {
    // A library's closure is the union of its roots' members.
    std::vector<core::ClosureRecord> full = closures;
    for (size_t i = 0; i < full.size(); ++i)
      if (found->first_of_set[i] != i)
        full[i].members = closures[found->first_of_set[i]].members;
    rep.libraries = record_libraries(local, req.library, full, rep.roots, req.link_images);
    for (const LibraryReport& l : rep.libraries) {
      if (l.image)
        served.insert(l.target);
      if (auto k = parse_hash128(l.closure))
        used.push_back(*k); // gc keeps the image that serves the roots
    }
  }
  if (req.link_images) {
    // Roots with the same members (a deferred cycle's) share one image: it
    // is found and checked once, for the first of them (as the precompile
    // links it). Images found missing (gc, or a precompile with --no-link
    // before) are linked in parallel, on the request's -j, as the driver
    // links them.
    std::map<size_t, Status> image_of_set;
    for (size_t i = 0; i < closures.size(); ++i)
      if (!served.count(rep.roots[i].target))
        image_of_set.try_emplace(found->first_of_set[i], Status::ok());
    std::vector<std::pair<const size_t, Status>*> sets;
    for (auto& entry : image_of_set)
      sets.push_back(&entry);
    unsigned parallel = req.jobs ? req.jobs : std::max(1u, std::thread::hardware_concurrency());
    parallel_for(sets.size(), parallel, [&](size_t t) {
      auto made = image::fetch_or_link(local, closures[sets[t]->first]);
      sets[t]->second = made ? Status::ok() : Status(made.error());
    });
    for (size_t i = 0; i < closures.size(); ++i) {
      RootReport& rr = rep.roots[i];
      if (served.count(rr.target)) {
        rr.image = true;
        continue;
      }
      const Status& image = image_of_set.at(found->first_of_set[i]);
      if (!image && image.error().code == Code::not_found)
        return Miss(); // evicted since the lookup (another process's gc): the driver,
                       // which leases what it uses, does the work
      report_image(rr, image);
    }
  }
  for (size_t i = 0; i < closures.size(); ++i) {
    RootReport& rr = rep.roots[i];
    const Hash128& closure = closures[i].key;
    used.push_back(closure);
    // A name another unit moved since is moved back, and reported, as a
    // precompile would; as there, only once its root succeeded.
    if (!rr.error.empty())
      continue;
    if (Status s = point_root(store, rr, closure, unit); !s) {
      // Another process's gc may evict the closure after the lookup found
      // it: then the memo cannot answer, and the driver (which leases what
      // it uses) does the work.
      if (s.error().code == Code::not_found)
        return Miss();
      return s.error();
    }
  }
  storage::Counters usage;
  usage.job_hits = int64_t(rep.jobs.size());
  (void)store.upkeep().record_usage(used, int64_t(std::time(nullptr)), usage);
  return Result<Miss>(Miss(std::move(rep)));
}

Result<std::optional<CompileReport>> memo_answer(const CompileRequest& request,
                                                 const std::string& cache_path,
                                                 const std::optional<Hash128>& key) {
  if (!key || ::access(cache_path.c_str(), F_OK) != 0)
    return std::optional<CompileReport>();
  KILN_TRY_ASSIGN(auto store, storage::open_records(cache_path));
  return memo_replay(*store, *key, request);
}

} // namespace kiln::memo
