// Kiln embedded in a front end: the C++ API (kiln/jit.hpp) over the compiler
// (Plan) and the loader, and the C API (kiln/kiln_compiler.h) over that.
// Compile-or-load parses and keys the unit, then asks the loader for the
// root's closure by key: a hit loads without compiling or writing anything;
// a miss compiles, stores and links through Plan::run, then loads.
#include "storage/local/store.h"
#include "memo/memo.h"
#include "runtime/backends.h"
#include "runtime/c_entry.h"
#include "runtime/loader.h"

#include <kiln/jit.hpp>
#include <kiln/kiln_compiler.h>

#include <cstring>

namespace kiln {

namespace {

std::string buffer_name(const char* name, size_t index) {
  return name && *name ? std::string(name) : "buffer" + std::to_string(index);
}

} // namespace

ErrorInfo error_info(const Error& error) {
  return {error.code, error.message, error.source, error.line, error.column,
          error.entry, error.target, error.job};
}

Result<CompileReport> compile(const Cache& cache, const CompileRequest& request) {
  if (!cache.raw())
    return make_error(Code::invalid_argument, "compile: the cache handle is empty");
  return kiln::compile(request, cache.raw()->storage->local().path());
}

std::string present_target() {
  // A GPU build of the unit only helps if the driver can load it here.
  if (auto arch = runtime::cuda_device_arch())
    return *arch;
  if (auto arch = runtime::hip_device_arch())
    return *arch;
  return "host";
}

namespace {

// Context for failures after planning: which root, for which target.
Error about_root(const Error& e, const RootReport& root) {
  return e.context("entry '" + root.name + "', target " + root.target)
      .with_entry(root.name)
      .with_target(root.target);
}

Result<Loaded> compile_or_load_in(kiln_cache& c, std::span<const Source> sources,
                                  std::string_view entry, std::string_view target,
                                  const JitOptions& options) {
  if (entry.empty())
    return make_error(Code::invalid_argument, "compile_or_load: no entry named");
  if (sources.empty())
    return make_error(Code::invalid_argument, "compile_or_load: no sources");
  CompileRequest req;
  for (size_t i = 0; i < sources.size(); ++i)
    req.inputs.push_back(SourceInput::memory(
        sources[i].name.empty() ? "buffer" + std::to_string(i) : std::string(sources[i].name),
        std::string(sources[i].bytes)));
  req.entries = {std::string(entry)};
  req.targets = {target.empty() ? present_target() : std::string(target)};
  req.opt_level = options.opt_level;
  req.debug = options.debug;
  req.jobs = options.jobs;
  req.link_images = true;
  req.must_hit = options.must_hit;

  // The request memo: a request seen before names its closure without the
  // IR being parsed at all.
  std::optional<Hash128> memo = memo::memo_key(req);
  if (memo) {
    auto hit = memo::memo_lookup(c.storage->local(), *memo);
    if (hit && *hit && (*hit)->report.roots.size() == 1) {
      CompileReport& rep = (*hit)->report;
      RootReport& root = rep.roots.front();
      auto img = runtime::load_image(c, root.closure, root.target);
      if (img) {
        root.image = true;
        return Loaded{Image::adopt(img.take().release()), std::move(rep), true};
      }
    }
  }

  KILN_TRY_ASSIGN(auto plan, Plan::create(req));

  // The closure key follows from the unit alone: if the cache holds that
  // closure, its jobs are there too, and loading it is the whole answer.
  CompileReport described = plan.describe();
  if (described.roots.size() != 1)
    return make_error(Code::internal, "compile_or_load: expected one root, planned " +
                                          std::to_string(described.roots.size()));
  {
    const RootReport& root = described.roots.front();
    auto img = runtime::load_image(c, root.closure, root.target);
    if (!img && img.error().code != Code::not_found)
      return about_root(img.error(), root);
    if (img) {
      for (JobReport& j : described.jobs)
        j.status = JobStatus::cached;
      described.roots.front().image = true;
      if (memo)
        (void)memo::memo_record(c.storage->local(), *memo, described, plan.toolchain_files());
      return Loaded{Image::adopt(img.take().release()), std::move(described), true};
    }
  }

  auto report = plan.run(c.storage->local().path());
  if (!report)
    return about_root(report.error(), described.roots.front());
  if (memo)
    (void)memo::memo_record(c.storage->local(), *memo, *report, plan.toolchain_files());
  for (const JobReport& j : report->jobs)
    if (j.status == JobStatus::failed)
      return make_error(Code::internal, "job '" + j.entry + "' (" + j.key + ") for target " +
                                            j.target + " failed: " + j.error)
          .with_entry(j.entry)
          .with_target(j.target)
          .with_job(j.key);
  const RootReport& root = report->roots.front();
  if (!root.error.empty())
    return make_error(Code::internal, "root '" + root.name + "' for target " + root.target +
                                          ": " + root.error)
        .with_entry(root.name)
        .with_target(root.target);
  auto img = runtime::load_image(c, root.closure, root.target);
  if (!img)
    return about_root(img.error(), root);
  return Loaded{Image::adopt(img.take().release()), report.take(), false};
}

} // namespace

Result<Loaded> compile_or_load(const Cache& cache, std::span<const Source> sources,
                               std::string_view entry, std::string_view target,
                               const JitOptions& options) {
  if (!cache.raw())
    return make_error(Code::invalid_argument, "compile_or_load: the cache handle is empty");
  return compile_or_load_in(*cache.raw(), sources, entry, target, options);
}

Result<CacheStats> stats(const Cache& cache) {
  if (!cache.raw())
    return make_error(Code::invalid_argument, "stats: the cache handle is empty");
  kiln_cache& c = *cache.raw();
  c.flush_usage(); // this handle's loads count too
  KILN_TRY_ASSIGN(auto s, c.storage->local().stats());
  CacheStats out;
  out.jobs = s.jobs;
  out.closures = s.closures;
  out.images = s.images;
  out.names = s.names;
  out.stored_bytes = s.stored_bytes;
  out.raw_bytes = s.raw_bytes;
  out.file_bytes = s.file_bytes;
  out.job_hits = s.counters.job_hits;
  out.job_misses = s.counters.job_misses;
  out.image_hits = s.counters.image_hits;
  out.image_misses = s.counters.image_misses;
  out.loads = s.counters.loads;
  out.jobs_per_target = s.jobs_per_target;
  return out;
}

} // namespace kiln

// --- the C API ----------------------------------------------------------------

struct kiln_compile_result {
  kiln::CompileReport report;
  std::vector<kiln_job_info> jobs;
  std::vector<kiln_root_info> roots;
};

namespace {

// This thread's last failure: the C view points into the C++ one.
struct LastError {
  kiln::ErrorInfo info;
  kiln_error_info view{KILN_OK, "", "", 0, 0, "", "", ""};
};
thread_local LastError t_error;

void clear_error() {
  t_error.info = {};
  t_error.view = {KILN_OK, "", "", 0, 0, "", "", ""};
}

kiln_status fail(const kiln::Error& e) {
  t_error.info = kiln::error_info(e);
  const kiln::ErrorInfo& i = t_error.info;
  t_error.view = {static_cast<kiln_status>(i.code), i.message.c_str(), i.source.c_str(), i.line,
                  i.column, i.entry.c_str(), i.target.c_str(), i.job.c_str()};
  kiln::runtime::set_last_error(i.message);
  return t_error.view.status;
}

// An exception stopped at a C entry point is reported like any other failure.
void report_internal(const std::string& message) {
  fail(kiln::make_error(kiln::Code::internal, message));
}

kiln_status fail_argument(const std::string& message) {
  return fail(kiln::make_error(kiln::Code::invalid_argument, message));
}

// The C options as views, checked: every pointer a count promises is there.
struct Views {
  std::vector<kiln::Source> sources;
  std::vector<std::string> names; ///< of the sources: what `sources` view
  std::vector<std::string> entries, targets;
};

kiln_status read_options(const char* fn, const kiln_compile_options* o, Views& v) {
  if (!o)
    return fail_argument(std::string(fn) + ": options is NULL");
  if (o->source_count && !o->sources)
    return fail_argument(std::string(fn) + ": source_count is " +
                         std::to_string(o->source_count) + " but sources is NULL");
  for (size_t i = 0; i < o->source_count; ++i) {
    const kiln_source& s = o->sources[i];
    v.names.push_back(kiln::buffer_name(s.name, i));
    if (s.size && !s.data)
      return fail_argument(std::string(fn) + ": source " + std::to_string(i) + " ('" +
                           v.names.back() + "') has size " + std::to_string(s.size) +
                           " but no data");
  }
  for (size_t i = 0; i < o->source_count; ++i)
    v.sources.push_back({v.names[i], {static_cast<const char*>(o->sources[i].data),
                                      o->sources[i].size}});
  auto strings = [&](const char* what, const char* const* p, size_t n,
                     std::vector<std::string>& out) -> kiln_status {
    if (n && !p)
      return fail_argument(std::string(fn) + ": " + what + "_count is " + std::to_string(n) +
                           " but " + what + " is NULL");
    for (size_t i = 0; i < n; ++i) {
      if (!p[i] || !*p[i])
        return fail_argument(std::string(fn) + ": " + what + "[" + std::to_string(i) +
                             "] is NULL or empty");
      out.emplace_back(p[i]);
    }
    return KILN_OK;
  };
  if (kiln_status st = strings("entries", o->entries, o->entry_count, v.entries); st != KILN_OK)
    return st;
  return strings("targets", o->targets, o->target_count, v.targets);
}

kiln_compile_result* make_result(kiln::CompileReport report) {
  auto* r = new kiln_compile_result{std::move(report), {}, {}};
  for (const kiln::JobReport& j : r->report.jobs)
    r->jobs.push_back({j.key.c_str(), j.entry.c_str(), j.target.c_str(), j.symbol.c_str(),
                       static_cast<kiln_job_status>(j.status), j.error.c_str(), j.compile_ms,
                       j.refs.size()});
  for (const kiln::RootReport& x : r->report.roots)
    r->roots.push_back({x.name.c_str(), x.target.c_str(), x.closure.c_str(), x.image ? 1 : 0,
                        x.note.c_str(), x.error.c_str()});
  return r;
}

static_assert(int(kiln::JobStatus::compiled) == KILN_JOB_COMPILED &&
              int(kiln::JobStatus::cached) == KILN_JOB_CACHED &&
              int(kiln::JobStatus::failed) == KILN_JOB_FAILED);

} // namespace

extern "C" {

void kiln_compile_options_init(kiln_compile_options* options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->opt_level = 2;
  options->link_images = 1;
  options->must_hit = kiln::must_hit_from_environment() ? 1 : 0;
}

kiln_status kiln_compile(kiln_cache* cache, const kiln_compile_options* options,
                         kiln_compile_result** out) {
  return kiln::runtime::c_entry("kiln_compile", [&]() -> kiln_status {
    clear_error();
    if (!cache || !out)
      return fail_argument("kiln_compile: cache and out must not be NULL");
    *out = nullptr;
    Views v;
    if (kiln_status st = read_options("kiln_compile", options, v); st != KILN_OK)
      return st;
    kiln::CompileRequest req;
    for (const kiln::Source& s : v.sources)
      req.inputs.push_back(kiln::SourceInput::memory(std::string(s.name), std::string(s.bytes)));
    req.entries = v.entries;
    if (!v.targets.empty())
      req.targets = v.targets;
    req.opt_level = options->opt_level;
    req.debug = options->debug != 0;
    req.jobs = options->jobs;
    req.link_images = options->link_images != 0;
    req.must_hit = options->must_hit != 0;
    auto report = kiln::compile(req, cache->storage->local().path());
    if (!report)
      return fail(report.error());
    *out = make_result(report.take());
    return KILN_OK;
  }, report_internal);
}

kiln_status kiln_compile_or_load(kiln_cache* cache, const kiln_compile_options* options,
                                 const char* entry, const char* target, kiln_image** out,
                                 kiln_compile_result** report) {
  return kiln::runtime::c_entry("kiln_compile_or_load", [&]() -> kiln_status {
    clear_error();
    if (report)
      *report = nullptr;
    if (!cache || !entry || !*entry || !out)
      return fail_argument("kiln_compile_or_load: cache, entry and out must not be NULL");
    *out = nullptr;
    Views v;
    if (kiln_status st = read_options("kiln_compile_or_load", options, v); st != KILN_OK)
      return st;
    if (!v.entries.empty() || !v.targets.empty())
      return fail_argument("kiln_compile_or_load: options name entries or targets; this call "
                           "takes the one entry and target as arguments");
    kiln::JitOptions jit;
    jit.opt_level = options->opt_level;
    jit.debug = options->debug != 0;
    jit.jobs = options->jobs;
    jit.must_hit = options->must_hit != 0;
    auto loaded = kiln::compile_or_load_in(*cache, v.sources, entry, target ? target : "", jit);
    if (!loaded)
      return fail(loaded.error());
    *out = loaded->image.release();
    if (report)
      *report = make_result(std::move(loaded->report));
    return KILN_OK;
  }, report_internal);
}

int kiln_compile_result_ok(const kiln_compile_result* result) {
  return result && result->report.ok() ? 1 : 0;
}

size_t kiln_compile_result_job_count(const kiln_compile_result* result) {
  return result ? result->jobs.size() : 0;
}

kiln_status kiln_compile_result_job(const kiln_compile_result* result, size_t index,
                                    kiln_job_info* out) {
  return kiln::runtime::c_entry("kiln_compile_result_job", [&]() -> kiln_status {
    clear_error();
    if (!result || !out)
      return fail_argument("kiln_compile_result_job: result and out must not be NULL");
    if (index >= result->jobs.size())
      return fail(kiln::make_error(kiln::Code::not_found,
                                   "kiln_compile_result_job: index " + std::to_string(index) +
                                       " is past the " + std::to_string(result->jobs.size()) +
                                       " jobs"));
    *out = result->jobs[index];
    return KILN_OK;
  }, report_internal);
}

kiln_status kiln_compile_result_job_ref(const kiln_compile_result* result, size_t job,
                                        size_t ref, const char** symbol, const char** key) {
  return kiln::runtime::c_entry("kiln_compile_result_job_ref", [&]() -> kiln_status {
    clear_error();
    if (!result || !symbol || !key)
      return fail_argument("kiln_compile_result_job_ref: result, symbol and key must not be NULL");
    if (job >= result->jobs.size() || ref >= result->report.jobs[job].refs.size())
      return fail(kiln::make_error(kiln::Code::not_found,
                                   "kiln_compile_result_job_ref: no reference " +
                                       std::to_string(ref) + " of job " + std::to_string(job)));
    const auto& [s, k] = result->report.jobs[job].refs[ref];
    *symbol = s.c_str();
    *key = k.c_str();
    return KILN_OK;
  }, report_internal);
}

size_t kiln_compile_result_root_count(const kiln_compile_result* result) {
  return result ? result->roots.size() : 0;
}

kiln_status kiln_compile_result_root(const kiln_compile_result* result, size_t index,
                                     kiln_root_info* out) {
  return kiln::runtime::c_entry("kiln_compile_result_root", [&]() -> kiln_status {
    clear_error();
    if (!result || !out)
      return fail_argument("kiln_compile_result_root: result and out must not be NULL");
    if (index >= result->roots.size())
      return fail(kiln::make_error(kiln::Code::not_found,
                                   "kiln_compile_result_root: index " + std::to_string(index) +
                                       " is past the " + std::to_string(result->roots.size()) +
                                       " roots"));
    *out = result->roots[index];
    return KILN_OK;
  }, report_internal);
}

void kiln_compile_result_free(kiln_compile_result* result) { delete result; }

const kiln_error_info* kiln_compile_last_error(void) { return &t_error.view; }

const char* kiln_present_target(void) {
  static const std::string target = kiln::present_target(); // devices do not come and go
  return target.c_str();
}

const char* kiln_job_status_name(kiln_job_status status) {
  return kiln::job_status_name(static_cast<kiln::JobStatus>(status));
}

} // extern "C"
