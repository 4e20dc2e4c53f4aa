// The driver: a worklist over the job graph. Every kiln_deferred reference,
// at any depth, becomes a job of its own with the same finishing steps; a
// visited set makes self-references and cycles terminate; jobs the cache
// already holds are not compiled; the rest compile in parallel, each in its
// own LLVM context, and are stored one transaction per job. With a remote
// tier, a job the local cache lacks is first fetched from it, and what is
// compiled, recorded or linked here is published to it; a sharded run
// compiles only its share of the jobs.
#include "request/plan.h"

#include "storage/records.h"
#include "codegen/compile.h"
#include "codegen/device_libs.h"
#include "codegen/worker/pool.h"
#include "codegen/llvm_target.h"
#include "core/check.h"
#include "core/explain.h"
#include "core/keys.h"
#include "memo/compiler_plugin.h"
#include "memo/library.h"
#include "memo/memo.h"
#include "memo/record.h"
#include "codegen/ptxas.h"
#include "ir/diagnose.h"
#include "ir/extract.h"
#include "ir/unit.h"
#include "storage/single_flight.h"
#include "storage/storage.h"
#include "support/fault.h"
#include "support/files.h"
#include "support/parallel.h"
#include "image/image.h"

#include <kiln/compiler.hpp>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <optional>
#include <unistd.h>

namespace kiln {

namespace {

struct PlannedJob {
  Hash128 key;
  core::KeyComponents components;
  std::string symbol;
  std::string bitcode;
  std::vector<ir::DeferredRef> refs; ///< symbol → child entry
  std::vector<std::pair<std::string, std::string>> renames; ///< placeholder → deferred symbol
  std::vector<Hash128> ref_keys;     ///< parallel to refs, filled after discovery
  std::vector<size_t> ref_jobs;      ///< parallel to refs: their indices in the plan's jobs
  core::TargetDesc target;
  /// Why this job cannot be built (its entry calls what nothing defines, its
  /// IR cannot be extracted, ...): it fails alone, with the roots that reach
  /// it, and the request's other jobs are still compiled and stored. Its key
  /// is then no job's (never stored, never looked up).
  std::optional<Error> failure;
};

struct PlannedRoot {
  std::string name;
  core::TargetDesc target;
  Hash128 root;
};

/// A unit image's library name: this prefix and its closure key. A
/// --library name never starts with it.
constexpr const char* kUnitImagePrefix = "kiln-unit-";

} // namespace

struct Plan::Impl {
  CompileRequest request;
  core::CodegenOptions options;
  std::vector<PlannedJob> jobs; ///< discovery order
  std::unordered_map<std::string, size_t> by_key; ///< key hex → index
  std::vector<PlannedRoot> roots;
  std::vector<std::string> warnings; ///< from check_unit_for_target, per target
  /// When planning began: a plan that takes longer than a second reports
  /// how far discovery has got (status "planning").
  std::chrono::steady_clock::time_point planning_started = std::chrono::steady_clock::now();

  Status discover(const llvm::Module& unit, const core::TargetDesc& target,
                  const std::vector<std::string>& roots);
  core::ClosureMap closure_of(const Hash128& root) const;
  Result<CompileReport> run(storage::Storage& cache);
  class Run;       ///< one run's phases
  class Discovery; ///< one target's walk from the roots
  JobReport report_of(const PlannedJob& j) const;
  core::JobRecord record_of(const PlannedJob& j) const;
  Error must_hit_miss(storage::Records& store, const PlannedJob& j) const;
};

// One target's discovery: every entry from the roots through their deferred
// references, each planned once as one job, in the order of a queue that
// skips what it has seen.
class Plan::Impl::Discovery {
public:
  Discovery(Impl& plan, const llvm::Module& unit, const core::TargetDesc& target)
      : plan_(plan), unit_(unit), target_(target), slow_(fault::hit("slow-plan")) {}

  Status run(const std::vector<std::string>& root_entries) {
    auto layout = codegen::target_data_layout(target_);
    if (!layout)
      return layout.error().with_target(target_.spec);
    toolchain_ = codegen::toolchain_fingerprint(target_);
    cfg_.triple = target_.triple;
    cfg_.data_layout = *layout;
    cfg_.debug = plan_.options.debug;
    cfg_.deferred_symbol = core::placeholder_symbol;
    found_.insert(root_entries.begin(), root_entries.end());
    work_.assign(root_entries.begin(), root_entries.end());
    while (!work_.empty()) {
      std::string entry = std::move(work_.front());
      work_.pop_front();
      if (key_of_entry_.count(entry))
        continue; // a root named twice
      report(entry, false);
      KILN_TRY(plan_entry(entry));
    }
    report("", true);
    for (size_t i : discovered_) {
      PlannedJob& job = plan_.jobs[i];
      for (const ir::DeferredRef& r : job.refs) {
        job.ref_keys.push_back(key_of_entry_.at(r.entry));
        job.ref_jobs.push_back(plan_.by_key.at(job.ref_keys.back().hex()));
      }
    }
    for (const std::string& r : root_entries)
      plan_.roots.push_back({r, target_, key_of_entry_.at(r)});
    return Status::ok();
  }

private:
  using Clock = std::chrono::steady_clock;

  bool kernel(const std::string& entry) const {
    const llvm::Function* f = unit_.getFunction(entry);
    return f && ir::is_kernel(*f);
  }

  // Extracts `entry` as a job and queues the entries it defers to.
  Status plan_entry(const std::string& entry) {
    // IR that misuses kiln_deferred is the input's error: the whole request
    // is refused (exit 2), as for IR that does not parse.
    auto ex = ir::extract_job(unit_, entry, cfg_);
    if (!ex)
      return ex.error().context("target " + target_.spec).with_target(target_.spec);
    auto libs = codegen::device_libs_fingerprint(target_, ex->callees);
    if (!libs) {
      unbuildable(entry, libs.error().context("target " + target_.spec + ", job '" + entry + "'"));
      return Status::ok();
    }
    if (Status callees = codegen::check_callees(target_, entry, ex->callees); !callees) {
      unbuildable(entry, callees.error());
      return Status::ok();
    }
    // The job's own target: on NVIDIA, the PTX ISA its IR asks for.
    auto own = codegen::job_target(target_, ex->ptx_isa, entry);
    if (!own) {
      unbuildable(entry, own.error());
      return Status::ok();
    }
    const core::CodegenOptions& options = plan_.options;
    PlannedJob job;
    job.components = {hash128(ex->bitcode), {entry, *own, options}, toolchain_ + *libs};
    job.key = core::job_key(job.components);
    job.symbol = core::job_symbol(job.components.identity, kernel(entry));
    job.bitcode = std::move(ex->bitcode);
    // The module names children by placeholders; the job's code (after
    // finishing) and every record name them by their deferred symbols.
    for (ir::DeferredRef& r : ex->refs) {
      std::string real = core::job_symbol({r.entry, target_, options}, kernel(r.entry));
      job.renames.emplace_back(r.symbol, real);
      r.symbol = std::move(real);
    }
    std::sort(ex->refs.begin(), ex->refs.end());
    job.refs = std::move(ex->refs);
    job.target = *own;
    for (const ir::DeferredRef& r : job.refs)
      if (found_.insert(r.entry).second)
        work_.push_back(r.entry);
    add(entry, std::move(job));
    return Status::ok();
  }

  // A job that cannot be built (it calls what nothing defines, it needs a
  // device library that is missing, its PTX ISA is beyond the toolchain) is
  // that job's error, not the unit's: it is planned as failed, and the roots
  // that reach it fail with it.
  void unbuildable(const std::string& entry, Error e) {
    PlannedJob job;
    job.key = hash128(std::string("kiln unbuildable job") + '\0' + target_.spec + '\0' + entry);
    job.components.identity = {entry, target_, plan_.options};
    job.symbol = core::job_symbol(job.components.identity, kernel(entry));
    job.target = target_;
    job.failure = std::move(e).with_entry(entry).with_target(target_.spec);
    add(entry, std::move(job));
  }

  void add(const std::string& entry, PlannedJob job) {
    key_of_entry_[entry] = job.key;
    ++extracted_;
    std::string hex = job.key.hex();
    if (plan_.by_key.count(hex))
      return; // the same job reached from another target spec alias
    plan_.by_key[hex] = plan_.jobs.size();
    discovered_.push_back(plan_.jobs.size());
    plan_.jobs.push_back(std::move(job));
  }

  // Progress on large graphs: nothing in the first second of the plan, then
  // at most four reports a second, and the final count once shown.
  void report(const std::string& entry, bool final) {
    if (!plan_.request.progress)
      return;
    Clock::time_point now = Clock::now();
    if (final ? !reported_
              : (!slow_ && now - plan_.planning_started < std::chrono::seconds(1)) ||
                    (reported_ && now - last_report_ < std::chrono::milliseconds(250)))
      return;
    reported_ = true;
    last_report_ = now;
    plan_.request.progress({extracted_, found_.size(), entry, target_.spec, "planning"});
  }

  Impl& plan_;
  const llvm::Module& unit_;
  const core::TargetDesc& target_;
  ir::ExtractConfig cfg_;
  std::string toolchain_;
  std::unordered_map<std::string, Hash128> key_of_entry_;
  std::unordered_set<std::string> found_; ///< every entry queued, for progress
  std::deque<std::string> work_;
  std::vector<size_t> discovered_; ///< the jobs this walk added
  size_t extracted_ = 0;
  Clock::time_point last_report_;
  bool reported_ = false;
  const bool slow_;
};

Status Plan::Impl::discover(const llvm::Module& unit, const core::TargetDesc& target,
                            const std::vector<std::string>& root_entries) {
  return Discovery(*this, unit, target).run(root_entries);
}

// Walks job indices, not key text: a graph whose every job is a root (a
// cycle) is walked once per root.
core::ClosureMap Plan::Impl::closure_of(const Hash128& root) const {
  std::map<std::string, Hash128> members;
  std::deque<size_t> work{by_key.at(root.hex())};
  std::unordered_set<size_t> seen;
  while (!work.empty()) {
    size_t i = work.front();
    work.pop_front();
    if (!seen.insert(i).second)
      continue;
    const PlannedJob& j = jobs[i];
    members[j.symbol] = j.key;
    for (size_t c : j.ref_jobs)
      work.push_back(c);
  }
  return {members.begin(), members.end()};
}

JobReport Plan::Impl::report_of(const PlannedJob& j) const {
  JobReport r;
  r.key = j.key.hex();
  r.entry = j.components.identity.entry;
  r.target = j.target.spec;
  r.symbol = j.symbol;
  r.triple = j.target.triple;
  r.cpu = j.target.cpu;
  r.features = j.target.features;
  r.options = options.canonical();
  r.module_hash = j.components.module_hash.hex();
  r.toolchain = j.components.toolchain;
  for (size_t i = 0; i < j.refs.size(); ++i)
    r.refs.emplace_back(j.refs[i].symbol, j.ref_keys[i].hex());
  if (j.failure) {
    r.status = JobStatus::failed;
    r.error = j.failure->message;
  }
  return r;
}

core::JobRecord Plan::Impl::record_of(const PlannedJob& j) const {
  core::JobRecord rec;
  rec.key = j.key;
  rec.entry = j.components.identity.entry;
  rec.symbol = j.symbol;
  rec.target = j.target.spec;
  rec.triple = j.target.triple;
  rec.cpu = j.target.cpu;
  rec.features = j.target.features;
  rec.options = options.canonical();
  rec.module_hash = j.components.module_hash;
  rec.toolchain = j.components.toolchain;
  return rec;
}

// Must-hit mode's refusal: the job, and why the cache's nearest one differs.
Error Plan::Impl::must_hit_miss(storage::Records& store, const PlannedJob& j) const {
  core::JobRecord wanted = record_of(j);
  auto cached = store.jobs().list_jobs();
  std::string why = cached ? core::describe_miss(wanted, core::explain_miss(wanted, *cached))
                           : "the cached jobs cannot be listed: " + cached.error().message;
  return make_error(Code::not_found, "must-hit: job '" + wanted.entry + "' for target " +
                                         wanted.target + " (key " + j.key.hex() +
                                         ") is not cached and would be compiled; " + why)
      .with_entry(wanted.entry)
      .with_target(wanted.target)
      .with_job(j.key.hex());
}

Plan::Plan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;
Plan::~Plan() = default;
size_t Plan::job_count() const { return impl_->jobs.size(); }

namespace {

// What a request asks that no input is needed to refuse.
Status check_request(const CompileRequest& request) {
  if (request.opt_level < 0 || request.opt_level > 3)
    return make_error(Code::invalid_argument, "optimization level must be 0..3, not " +
                                                  std::to_string(request.opt_level));
  if (request.shard_count == 0 || request.shard_index >= request.shard_count)
    return make_error(Code::invalid_argument,
                      "shard " + std::to_string(request.shard_index) + " of " +
                          std::to_string(request.shard_count) +
                          " does not exist (shards are 0..count-1, count at least 1)");
  if (Status s = core::check_name(request.library, "library"); !s)
    return make_error(Code::invalid_argument,
                      s.error().message + "; give the library another name");
  if (request.library.rfind(kUnitImagePrefix, 0) == 0)
    return make_error(Code::invalid_argument,
                      "library name '" + request.library + "' starts with '" + kUnitImagePrefix +
                          "', which names the images a request's roots share; give the "
                          "library another name");
  return Status::ok();
}

// A request's targets, each once, in the order first named.
struct Targets {
  std::vector<core::TargetDesc> list;
  std::set<std::string> seen;

  Status add(const std::string& spec) {
    auto t = codegen::resolve_target(spec);
    if (!t) {
      Error e = t.error().with_target(spec);
      e.code = Code::invalid_argument;
      return e;
    }
    if (seen.insert(t->spec).second)
      list.push_back(*t);
    return Status::ok();
  }
};

// The request's inputs, with each bitcode file read into memory and read
// once in a worker first: LLVM's reader crashes on some hostile streams, and
// that must end the worker, not this process. A file is read here only when
// its first bytes say bitcode: text IR is left for ingest to map, not copied
// first.
Result<std::vector<ir::Input>> read_inputs(const CompileRequest& request) {
  std::vector<ir::Input> inputs;
  for (const SourceInput& s : request.inputs)
    inputs.push_back({s.name, s.bytes, s.in_memory});
  for (ir::Input& in : inputs) {
    if (!in.in_memory) {
      std::string head(4, '\0');
      std::FILE* f = std::fopen(in.name.c_str(), "rb");
      size_t got = f ? std::fread(head.data(), 1, head.size(), f) : 0;
      if (f)
        std::fclose(f);
      head.resize(got);
      if (!ir::is_bitcode(head))
        continue; // not bitcode, or unreadable: ingest says why
      auto bytes = read_file(in.name);
      if (!bytes)
        continue;
      in.bytes = bytes.take();
      in.in_memory = true;
    }
    if (ir::is_bitcode(in.bytes)) {
      KILN_TRY(ir::check_input(in.name, in.bytes));
      // Without a worker (none installed, none can start), bitcode is read
      // here as it always was: a plan whose jobs are all cached needs no
      // worker, and one that compiles fails for want of one anyway.
      if (Status read = codegen::check_bitcode_isolated(in.name, in.bytes);
          !read && read.error().code != Code::unavailable)
        return read.error();
    }
  }
  return inputs;
}

// The roots of `unit` on `t`, each once, in order. Explicit entries are
// roots on every target. By default the host takes every exported function
// and a GPU target every exported kernel (a device function alone is no
// loadable image).
Result<std::vector<std::string>> roots_on(const llvm::Module& unit, const core::TargetDesc& t,
                                          const std::vector<std::string>& entries) {
  std::vector<std::string> roots = entries;
  if (roots.empty()) {
    roots = ir::exported_functions(unit, t.kind != core::TargetKind::host);
    if (roots.empty())
      return make_error(Code::invalid_argument,
                        t.kind == core::TargetKind::host
                            ? "the unit defines no externally visible function to precompile"
                            : "the unit defines no kernel to precompile for " + t.spec +
                                  " (mark kernels with ptx_kernel/amdgpu_kernel or the "
                                  "\"kiln-kernel\" attribute, or name roots with --entry)")
          .with_target(t.spec);
  }
  std::set<std::string> unique_roots;
  std::vector<std::string> ordered_roots;
  for (const std::string& r : roots) {
    // Refused before anything is compiled: the name could not be loaded by
    // name, and would stand in for the closure whose key it spells.
    if (!core::check_name(r, "root"))
      return make_error(Code::invalid_argument,
                        "function '" + r +
                            "' cannot be a root: its name has the form of a closure key (32 "
                            "hex digits), and a string of that form is looked up by closure "
                            "key only; rename it, or do not make it a root (give it internal "
                            "linkage, or name the roots with --entry)")
          .with_entry(r)
          .with_target(t.spec);
    if (unique_roots.insert(r).second)
      ordered_roots.push_back(r);
  }
  return ordered_roots;
}

} // namespace

Result<Plan> Plan::create(const CompileRequest& request) {
  KILN_TRY(check_request(request));
  auto impl = std::make_unique<Impl>();
  impl->request = request;
  impl->options.opt_level = request.opt_level;
  impl->options.debug = request.debug;
  Targets targets;
  for (const std::string& spec : request.targets)
    KILN_TRY(targets.add(spec));

  llvm::LLVMContext ctx;
  std::string source; // the inputs, for messages
  for (const SourceInput& s : request.inputs)
    source += (source.empty() ? "" : ", ") + s.name;
  KILN_TRY_ASSIGN(auto inputs, read_inputs(request));
  KILN_TRY_ASSIGN(auto unit, ir::ingest(ctx, inputs));
  // No targets: the one the IR was built for (GPU IR is never compiled for
  // the host by default), else the host.
  if (request.targets.empty()) {
    KILN_TRY_ASSIGN(std::string own, ir::target_of_unit(*unit, source));
    KILN_TRY(targets.add(own.empty() ? "host" : own));
  }
  for (const std::string& r : request.entries) {
    const llvm::Function* f = unit->getFunction(r);
    if (!f || f->isDeclaration())
      return make_error(Code::invalid_argument, ir::describe_missing_entry(*unit, r))
          .with_entry(r);
  }
  for (const core::TargetDesc& t : targets.list) {
    // IR for another kind of target is refused before its roots are looked
    // for; IR specialised for another GPU of this kind is a warning.
    KILN_TRY_ASSIGN(auto warnings, ir::check_unit_for_target(*unit, t, source));
    impl->warnings.insert(impl->warnings.end(), warnings.begin(), warnings.end());
    KILN_TRY_ASSIGN(auto roots, roots_on(*unit, t, request.entries));
    KILN_TRY(impl->discover(*unit, t, roots));
  }
  return Plan(std::move(impl));
}

CompileReport Plan::describe() const {
  CompileReport rep;
  rep.warnings = impl_->warnings;
  for (const PlannedJob& j : impl_->jobs)
    rep.jobs.push_back(impl_->report_of(j));
  for (const PlannedRoot& r : impl_->roots) {
    RootReport rr;
    rr.name = r.name;
    rr.target = r.target.spec;
    core::ClosureMap members = impl_->closure_of(r.root);
    for (const auto& [symbol, key] : members)
      if (const PlannedJob& j = impl_->jobs[impl_->by_key.at(key.hex())]; j.failure) {
        rr.error = "member job '" + j.components.identity.entry + "' cannot be built: " +
                   j.failure->message;
        break;
      }
    if (rr.error.empty())
      rr.closure = core::closure_key(r.root, members).hex();
    rep.roots.push_back(std::move(rr));
  }
  return rep;
}

Result<CompileReport> Plan::run(const std::string& cache_path) {
  auto opened =
      storage::Storage::open(cache_path, impl_->request.remote, impl_->request.remote_read_only);
  if (!opened)
    return opened.error();
  auto report = impl_->run(**opened);
  // Closing's work is an optimisation (request.cpp's plan_run_record).
  if (Status closed = (*opened)->close(); !closed && report)
    report->warnings.push_back(closed.error().message);
  return report;
}

std::vector<std::string> Plan::toolchain_files() const {
  std::set<std::string> files;
  for (const PlannedJob& j : impl_->jobs)
    for (std::string& f : codegen::toolchain_files(j.target))
      files.insert(std::move(f));
  return {files.begin(), files.end()};
}

namespace {

// A job's shard: its key's low bits, so every machine agrees without talking.
unsigned shard_of(const Hash128& key, unsigned count) { return unsigned(key.lo % count); }

// How long a precompile's leases protect its jobs from gc if it never
// releases them (it crashed): far longer than any precompile runs.
constexpr int64_t kLeaseSeconds = 24 * 3600;

// Unit images: the roots of one request for one GPU target are linked as one
// image, a library closure like --library's, recorded under a name made from
// its key (kUnitImagePrefix), and each root's load finds it
// (Store::read_best_image). An image link has a fixed cost per image
// (nvJitLink's assembler: about 11.5 ms each; AMDGPU code generation and
// lld), so N roots linked one by one cost N of them against the hand
// pipeline's one ptxas or lld. Host roots keep a shared object each (see
// ARCHITECTURE.md). A load of a root loads the whole union, so
// a union holds at most kUnitImageMembers member jobs (one ptxas part, one
// AMDGPU code generation part); more roots make several unions, packed in the
// plan's order, so the same unit gives the same unions in every process and
// at any -j.
constexpr size_t kUnitImageMembers = 16;

} // namespace

namespace {

// One root on its way through a run: its closure recorded, then its image
// linked (or found, or served by its library's), then its name moved.
struct PendingRoot {
  RootReport rr;
  core::NameRecord name;
  bool link = false;  ///< its image is to be linked
  Hash128 members;    ///< when linked: its member set's key
  /// The library or unit image (Run::libraries) that holds its members, if
  /// any: that image is linked instead of its own.
  std::optional<size_t> library;
  std::optional<Status> image; ///< how linking (or finding) its image went
  bool done = false; ///< reported as it is (an error, or left to other shards)
};

} // namespace

// A plan run over a cache, phase by phase (run()). The phases share what
// the run has found so far: the report, the jobs left to compile, the
// roots on their way, and the kernel libraries.
class Plan::Impl::Run {
public:
  Run(Impl& plan, storage::Storage& cache)
      : p(plan), cache(cache), store(cache.records()),
        parallel(plan.request.jobs ? plan.request.jobs
                                   : std::max(1u, std::thread::hardware_concurrency())),
        unit(memo::unit_of(plan.request)) {}
  ~Run() { release_leases(); }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  Result<CompileReport> run() {
    lease_jobs();
    KILN_TRY(find_jobs());
    KILN_TRY(compile_jobs());
    record_closures();
    make_libraries();
    make_unit_images();
    link_images();
    move_names();
    record_libraries();
    release_leases();
    account();
    return std::move(rep);
  }

private:
  /// Every planned job is leased before the cache is asked for it, so that
  /// a gc in another process evicts neither a job found here nor one stored
  /// here before this run records the closures that use it. A lease that
  /// cannot be written is a cache that cannot take the jobs either.
  void lease_jobs() {
    holder = hash128(std::to_string(::getpid()) + ":" +
                     std::to_string(
                         std::chrono::system_clock::now().time_since_epoch().count()) +
                     ":" + std::to_string(reinterpret_cast<uintptr_t>(this)))
                 .hex();
    std::vector<Hash128> keys;
    for (const PlannedJob& j : p.jobs)
      keys.push_back(j.key);
    (void)store.claims().lease_jobs(holder, keys, int64_t(std::time(nullptr)) + kLeaseSeconds);
    leased = true;
  }

  void release_leases() {
    if (leased)
      (void)store.claims().release_leases(holder);
    leased = false;
  }

  /// Each job cached (here or in the remote tier), left to another shard, or
  /// to compile; a must-hit request stops at the first miss.
  Status find_jobs() {
    const unsigned shards = p.request.shard_count;
    rep.warnings = p.warnings;
    for (const PlannedJob& j : p.jobs) {
      rep.jobs.push_back(p.report_of(j));
      JobReport& r = rep.jobs.back();
      if (j.failure)
        continue;
      std::vector<std::string> formats = codegen::artifact_formats(j.target);
      auto found = cache.find_job(j.key, formats);
      if (!found)
        return found.error().with_job(j.key.hex());
      if (*found != storage::Found::nowhere) {
        r.status = JobStatus::cached;
        r.remote = *found == storage::Found::remote;
      } else if (shards > 1 && shard_of(j.key, shards) != p.request.shard_index) {
        r.status = JobStatus::cached;
        r.other_shard = true;
      } else {
        todo.push_back(rep.jobs.size() - 1);
      }
    }
    if (p.request.must_hit && !todo.empty())
      return p.must_hit_miss(store, p.jobs[todo.front()]);
    total = p.jobs.size();
    for (size_t i = 0; i < rep.jobs.size(); ++i)
      if (rep.jobs[i].status == JobStatus::cached || p.jobs[i].failure)
        report_progress(rep.jobs[i]);
    return Status::ok();
  }

  void report_progress(const JobReport& r) {
    std::lock_guard lock(progress_mu);
    ++done;
    if (p.request.progress)
      p.request.progress({done, total, r.entry, r.target, job_status_name(r.status)});
  }

  /// The jobs to compile, on as many workers as asked, each stored as it
  /// finishes. Single-flight (storage/single_flight.h): a job another
  /// process is compiling (on this cache, or on a machine sharing its remote
  /// tier) is waited for and found cached, not compiled again.
  Status compile_jobs() {
    std::vector<Hash128> keys;
    for (size_t i : todo)
      keys.push_back(p.jobs[i].key);
    storage::FlightCalls calls;
    calls.ready = [&](size_t t) -> Result<bool> {
      const PlannedJob& j = p.jobs[todo[t]];
      KILN_TRY_ASSIGN(storage::Found found,
                      cache.find_job(j.key, codegen::artifact_formats(j.target)));
      if (found == storage::Found::remote)
        rep.jobs[todo[t]].remote = true;
      return found != storage::Found::nowhere;
    };
    calls.work = [&](size_t t) { compile_job(todo[t]); };
    calls.theirs = [&](size_t t, double) {
      JobReport& r = rep.jobs[todo[t]];
      r.status = JobStatus::cached;
      report_progress(r);
    };
    calls.waiting = [&](const std::vector<storage::FlightWait>& waits) {
      if (!p.request.progress)
        return;
      // One report for the wait that began first: which job, whose, how long.
      const storage::FlightWait* first = &waits.front();
      for (const storage::FlightWait& w : waits)
        if (w.seconds > first->seconds)
          first = &w;
      const JobReport& r = rep.jobs[todo[first->index]];
      char how_long[32];
      std::snprintf(how_long, sizeof how_long, "%.1f s", first->seconds);
      std::lock_guard lock(progress_mu);
      p.request.progress({done, total, r.entry, r.target,
                          "waiting for " + first->holder + ", " + how_long +
                              (waits.size() > 1 ? " (and " + std::to_string(waits.size() - 1) +
                                                      " more jobs)"
                                                : std::string())});
    };
    return storage::single_flight(cache, keys, calls, storage::flight_options(parallel));
  }

  /// One job compiled and stored (or failed).
  void compile_job(size_t i) {
    const PlannedJob& j = p.jobs[i];
    JobReport& r = rep.jobs[i];
    auto start = std::chrono::steady_clock::now();
    auto arts = codegen::compile_job_isolated({r.entry, j.symbol, j.bitcode, j.renames}, j.target,
                                              p.options, &r.warnings);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    r.compile_ms = ms;
    if (!arts) {
      r.status = JobStatus::failed;
      r.error = arts.error().message;
      report_progress(r);
      return;
    }
    core::JobRecord rec = p.record_of(j);
    rec.compile_ms = ms;
    std::vector<core::Artifact> stored;
    for (codegen::CompiledArtifact& a : *arts)
      stored.push_back({a.format, std::move(a.bytes)});
    std::vector<core::JobRef> refs;
    for (const ir::DeferredRef& d : j.refs)
      refs.push_back({d.symbol, d.entry});
    Status s = cache.put_job(rec, stored, refs);
    if (!s) {
      r.status = JobStatus::failed;
      r.error = s.error().message;
    } else {
      r.status = JobStatus::compiled;
    }
    report_progress(r);
  }

  /// Each root's closure recorded (in order) and published; a root whose
  /// member job failed, or is another shard's, is reported as it is.
  void record_closures() {
    std::unordered_map<std::string, const JobReport*> status_of;
    for (const JobReport& r : rep.jobs)
      status_of[r.key] = &r;
    pending.resize(p.roots.size());
    for (size_t ri = 0; ri < p.roots.size(); ++ri) {
      const PlannedRoot& root = p.roots[ri];
      PendingRoot& pr = pending[ri];
      RootReport& rr = pr.rr;
      rr.name = root.name;
      rr.target = root.target.spec;
      core::ClosureMap members = p.closure_of(root.root);
      size_t elsewhere = 0;
      for (const auto& [symbol, key] : members) {
        const JobReport* jr = status_of.at(key.hex());
        if (jr->status == JobStatus::failed && rr.error.empty())
          rr.error = "member job '" + jr->entry + "' (" + jr->key + ") failed: " + jr->error;
        elsewhere += jr->other_shard;
      }
      if (!rr.error.empty()) {
        pr.done = true;
        continue;
      }
      Hash128 ck = core::closure_key(root.root, members);
      core::ClosureRecord rec;
      rec.key = ck;
      rec.root_job = root.root;
      rec.target = root.target.spec;
      for (const auto& [symbol, key] : members)
        rec.members.push_back({symbol, key, {}});
      pr.name = core::NameRecord{root.name, root.target.spec, ck};
      // The closure and name are pure functions of the plan: every shard
      // publishes them, so a loader finds them whichever shard compiled what.
      cache.publish_closure(rec);
      cache.publish_name(pr.name);
      if (elsewhere) {
        rr.note = "left to other shards (" + std::to_string(elsewhere) + " of " +
                  std::to_string(members.size()) + " member jobs are theirs)";
        pr.done = true;
        continue;
      }
      Status s = store.closures().put_closure(rec, {});
      if (!s) {
        rr.error = s.error().message;
        pr.done = true;
        continue;
      }
      rr.closure = ck.hex();
      if (p.request.link_images) {
        // The closure is read back when its image is linked, not here: the
        // roots of a 1,000-function cycle hold 1,000 members each.
        pr.link = true;
        pr.members = core::member_set_key(std::move(members));
      }
    }
  }

  /// A kernel library's closure for each target (a --library request).
  void make_libraries() {
    // A library's image holds every kernel of its roots: it is linked, and
    // the roots of its target are not (each root's load finds the library's
    // image, Store::read_best_image). Its closure is stored here;
    // record_library later finds the image and records the library (or
    // reports why not, linking again only then). A target whose roots give no
    // library (a root without a closure here, two roots' code under one
    // symbol) links its roots one by one.
    if (!p.request.library.empty() && p.request.link_images) {
      std::map<std::string, std::vector<Hash128>> roots_of;
      std::set<std::string> incomplete; ///< a root without a closure here: no library
      for (size_t ri = 0; ri < pending.size(); ++ri) {
        const std::string& target = pending[ri].rr.target;
        if (pending[ri].link)
          roots_of[target].push_back(pending[ri].name.closure);
        else
          incomplete.insert(target);
      }
      for (auto& [target, keys] : roots_of) {
        if (incomplete.count(target))
          continue;
        auto batch = store.closures().get_closures(keys);
        if (!batch)
          continue; // record_library reports it
        for (size_t i = 0; i < batch->closures.size(); ++i)
          if (batch->first_of_set[i] != i)
            batch->closures[i].members = batch->closures[batch->first_of_set[i]].members;
        auto lib = core::library_closure(batch->closures);
        if (lib && store.closures().put_closure(*lib, {})) {
          for (PendingRoot& pr : pending)
            if (pr.link && pr.rr.target == target)
              pr.library = libraries.size();
          libraries.push_back(lib.take());
        }
      }
    }
  }

  /// Unit images (kUnitImageMembers): without --library, the roots of a GPU
  /// target are packed, in order, into unions of at most kUnitImageMembers
  /// member jobs; a union of two member sets or more is recorded as a library
  /// named by its key and linked instead of its roots (link_images), and each
  /// root's load finds it. A root that failed, or is left to other shards, is
  /// in none (the others still share theirs); a root whose members alone
  /// pass the limit is linked on its own; a root that brings other code under
  /// a symbol the current union has starts the next one (two roots' code
  /// under one symbol never meet in one image). Not with a remote tier or
  /// shards: another machine fetches a root's image by the root's closure,
  /// so each root's own image is published there.
  void make_unit_images() {
    if (!p.request.library.empty() || !p.request.link_images || cache.has_remote() ||
        p.request.shard_count > 1)
      return;
    std::map<std::string, std::vector<size_t>> roots_of; ///< target → its roots to link
    for (size_t ri = 0; ri < pending.size(); ++ri)
      if (pending[ri].link && !pending[ri].library &&
          core::target_kind(pending[ri].rr.target) != core::TargetKind::host)
        roots_of[pending[ri].rr.target].push_back(ri);
    for (auto& [target, ris] : roots_of) {
      std::set<Hash128> sets;
      for (size_t ri : ris)
        sets.insert(pending[ri].members);
      if (sets.size() < 2)
        continue; // one member set: one image already
      std::vector<Hash128> keys;
      for (size_t ri : ris)
        keys.push_back(pending[ri].name.closure);
      auto batch = store.closures().get_closures(keys);
      if (!batch)
        continue; // each root links its own (and reports why not)
      for (size_t i = 0; i < batch->closures.size(); ++i)
        if (batch->first_of_set[i] != i)
          batch->closures[i].members = batch->closures[batch->first_of_set[i]].members;
      // The unions, packed in the roots' order: a root joins the current one
      // unless it would pass the limit or bring other code under a symbol
      // there, and then starts the next.
      struct Union {
        std::vector<size_t> roots; ///< indices into ris
        std::map<std::string, Hash128> members;
        std::set<Hash128> sets;
      };
      std::vector<Union> unions(1);
      for (size_t i = 0; i < ris.size(); ++i) {
        const core::ClosureRecord& c = batch->closures[i];
        if (c.members.empty() || c.members.size() > kUnitImageMembers)
          continue;
        auto fits = [&](const Union& u) {
          size_t added = 0;
          for (const core::ClosureMember& m : c.members) {
            auto it = u.members.find(m.symbol);
            if (it == u.members.end())
              ++added;
            else if (!(it->second == m.job))
              return false;
          }
          return u.members.size() + added <= kUnitImageMembers;
        };
        if (!fits(unions.back()))
          unions.emplace_back();
        Union& u = unions.back();
        u.roots.push_back(i);
        for (const core::ClosureMember& m : c.members)
          u.members.emplace(m.symbol, m.job);
        u.sets.insert(pending[ris[i]].members);
      }
      for (const Union& u : unions) {
        if (u.sets.size() < 2)
          continue; // its roots' own image is the union
        std::vector<core::ClosureRecord> closures;
        core::LibraryRecord record;
        record.target = target;
        for (size_t i : u.roots) {
          closures.push_back(batch->closures[i]);
          record.roots.push_back(pending[ris[i]].rr.name);
        }
        std::sort(record.roots.begin(), record.roots.end());
        auto lib = core::library_closure(closures);
        if (!lib)
          continue;
        record.closure = lib->key;
        record.name = kUnitImagePrefix + lib->key.hex();
        // The closure and its library row in one transaction: the row is
        // what lets a root's load find the union's image.
        if (!store.images().put_library(*lib, record))
          continue;
        for (size_t i : u.roots)
          pending[ris[i]].library = libraries.size();
        libraries.push_back(lib.take());
      }
    }
  }

  /// Images linked in parallel, on the compile workers' count (an in-process
  /// link, nvJitLink's above all, is the slow part): each library's, and one
  /// per member set of the roots it does not serve.
  void link_images() {
    // Roots with the same members (the roots of one deferred cycle, each
    // reaching all of it) share one image: the first of them links it (or
    // finds it), and the others have its outcome. Linking and checking do not
    // depend on the root, only on the members, and storage finds an image by
    // its closure's member set, so a load of any of them finds this one.
    std::vector<size_t> leaders;
    std::vector<std::pair<size_t, size_t>> followers; ///< (root, its leader)
    std::vector<std::pair<size_t, size_t>> in_library; ///< (root, its library)
    {
      std::map<Hash128, size_t> leader_of;
      for (size_t ri = 0; ri < pending.size(); ++ri) {
        if (!pending[ri].link)
          continue;
        if (pending[ri].library) {
          in_library.emplace_back(ri, *pending[ri].library);
          continue;
        }
        auto [it, first] = leader_of.emplace(pending[ri].members, ri);
        if (first)
          leaders.push_back(ri);
        else
          followers.emplace_back(ri, it->second);
      }
    }
    // Links the libraries `libs` (by index) and the roots `roots` (leaders),
    // on as many threads as asked. The library goes first: it is the longest
    // link, and the other linkers take the roots meanwhile.
    std::vector<Status> library_image(libraries.size(), Status::ok());
    // NVIDIA images are linked in the code generation workers: a toolkit
    // crash is that image's error, and nvJitLink's large buffers live in a
    // worker's heap (tuned for them) instead of the caller's.
    const image::NvLinker nv_link = [](const std::vector<link::NvInput>& inputs,
                                       const std::string& arch, bool device_runtime) {
      return codegen::nvlink_isolated(inputs, arch, device_runtime);
    };
    auto link_all = [&](const std::vector<size_t>& libs, const std::vector<size_t>& roots) {
      parallel_for(libs.size() + roots.size(), parallel, [&](size_t t) {
        if (t < libs.size()) {
          // The library is the longest link, and usually the only one: its
          // code generation may use every thread asked for.
          auto image =
              image::fetch_or_link(cache, libraries[libs[t]], nullptr, parallel, &nv_link);
          library_image[libs[t]] = image ? Status::ok() : Status(image.error());
          return;
        }
        PendingRoot& pr = pending[roots[t - libs.size()]];
        auto stored = store.closures().get_closure(pr.name.closure);
        if (!stored) {
          pr.image = Status(stored.error());
          return;
        }
        auto image = image::fetch_or_link(cache, *stored, nullptr, 1, &nv_link);
        pr.image = image ? Status::ok() : Status(image.error());
      });
    };
    std::vector<size_t> all_libraries(libraries.size());
    for (size_t l = 0; l < libraries.size(); ++l)
      all_libraries[l] = l;
    link_all(all_libraries, leaders);
    // A library whose link failed (not for want of a linker) does not serve
    // its roots: they are linked one by one, as a memo's answer would, and a
    // root's own error is its own.
    std::vector<size_t> again;
    std::vector<std::pair<size_t, size_t>> served; ///< (root, its library), library linked
    {
      std::map<Hash128, size_t> leader_of;
      for (const auto& [ri, lib] : in_library) {
        const Status& s = library_image[lib];
        if (s || s.error().code == Code::unavailable) {
          served.emplace_back(ri, lib);
          continue;
        }
        auto [it, first] = leader_of.emplace(pending[ri].members, ri);
        if (first)
          again.push_back(ri);
        else
          followers.emplace_back(ri, it->second);
      }
    }
    if (!again.empty())
      link_all({}, again);
    for (const auto& [ri, leader] : followers)
      pending[ri].image = pending[leader].image;
    for (const auto& [ri, lib] : served)
      pending[ri].image = library_image[lib];
  }

  /// Each root reported, and its name moved once it has succeeded (in order):
  /// a root whose image fails to link keeps naming the closure it named
  /// before (memo/record.h, as every path that answers a request).
  void move_names() {
    for (size_t ri = 0; ri < pending.size(); ++ri) {
      PendingRoot& pr = pending[ri];
      RootReport& rr = pr.rr;
      if (!pr.done) {
        if (pr.image)
          memo::report_image(rr, *pr.image);
        if (rr.error.empty())
          if (Status s = memo::point_root(store, rr, pr.name.closure, unit); !s)
            rr.error = s.error().message;
      }
      rep.roots.push_back(std::move(rr));
    }
  }

  /// The libraries recorded (memo/library.h), their images found or linked.
  void record_libraries() {
    if (!p.request.library.empty()) {
      std::vector<core::ClosureRecord> closures;
      for (const RootReport& r : rep.roots) {
        auto k = parse_hash128(r.closure);
        auto c = k ? store.closures().get_closure(*k) : Result<core::ClosureRecord>(k.error());
        closures.push_back(c ? c.take() : core::ClosureRecord{});
      }
      rep.libraries = memo::record_libraries(cache, p.request.library, closures, rep.roots,
                                             p.request.link_images);
    }
  }

  /// Usage counted, and the cache's size limit kept.
  void account() {
    storage::Counters usage;
    for (const JobReport& r : rep.jobs) {
      usage.job_hits += r.status == JobStatus::cached && !r.other_shard;
      usage.job_misses += r.status == JobStatus::compiled;
    }
    cache.take_remote_counters(usage);
    (void)store.upkeep().add_counters(usage); // statistics never fail a precompile
    // The size limit, enforced after each precompile: two pragmas tell whether
    // the cache is over; only then does gc walk the least recently used.
    auto limit = store.upkeep().max_size();
    auto live = store.upkeep().live_bytes();
    if (limit && live && *live > *limit) {
      storage::GcOptions gc;
      gc.max_size = *limit;
      gc.vacuum = false;
      // What this precompile made stays, whatever the limit: evicting it would
      // make the run pointless.
      for (const RootReport& r : rep.roots)
        if (auto k = parse_hash128(r.closure))
          gc.keep.push_back(*k);
      for (const LibraryReport& l : rep.libraries)
        if (auto k = parse_hash128(l.closure))
          gc.keep.push_back(*k);
      for (const core::ClosureRecord& u : libraries) // the unit images too
        gc.keep.push_back(u.key);
      if (auto evicted = store.upkeep().gc(gc))
        rep.evicted_closures = evicted->evicted_closures.size();
    }
  }

  Impl& p;
  storage::Storage& cache;
  storage::Records& store;
  const unsigned parallel; ///< compile workers and linkers at once
  const std::string unit;  ///< the request's input names, for its roots' names
  std::string holder;      ///< this run's leases
  bool leased = false;
  CompileReport rep;
  std::vector<size_t> todo; ///< indices of the jobs to compile
  std::mutex progress_mu;
  size_t done = 0, total = 0;
  std::vector<PendingRoot> pending;
  /// The --library closures and the unit images' (PendingRoot::library).
  std::vector<core::ClosureRecord> libraries;
};

Result<CompileReport> Plan::Impl::run(storage::Storage& cache) { return Run(*this, cache).run(); }

struct PlanAccess {
  static Plan::Impl& of(Plan& plan) { return *plan.impl_; }
};

namespace driver {

Result<CompileReport> run_plan(Plan& plan, storage::Storage& cache) {
  return PlanAccess::of(plan).run(cache);
}

const CompileRequest& request_of(Plan& plan) { return PlanAccess::of(plan).request; }

} // namespace driver

} // namespace kiln
