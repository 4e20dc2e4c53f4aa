// Kiln embedded in a front end: the C++ API (kiln/jit.hpp) over the compiler
// (Plan) and the loader, and the C API (kiln/kiln_compiler.h) over that.
// Compile-or-load parses and keys the unit, then asks the loader for the
// root's closure by key: a hit loads without compiling or writing anything;
// a miss compiles, stores and links through Plan::run, then loads.
#include "request/request.h"
#include "storage/records.h"
#include "memo/memo.h"
#include "memo/record.h"
#include "runtime/backends.h"
#include "runtime/c_entry.h"
#include "runtime/handle_set.h"
#include "runtime/handles.h"
#include "runtime/loader.h"

#include <kiln/jit.hpp>
#include <kiln/kiln_compiler.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <string_view>

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

Result<CompileReport> compile(const CompileRequest& request, const Cache& cache) {
  if (!cache.raw())
    return make_error(Code::invalid_argument, "compile: the cache handle is empty");
  KILN_TRY_ASSIGN(storage::Storage * st, cache.raw()->store());
  return request::answer(request, {"", &st->records()});
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

/// The request for root `entry` of in-memory sources.
CompileRequest request_for(std::span<const Source> sources, std::string_view entry,
                           std::string_view target, const JitOptions& options) {
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
  req.remote = options.remote;
  req.remote_read_only = options.remote_read_only;
  return req;
}

/// A caller that wants no report is answered from the memo's one row:
/// loading the closure reads and checks it (its members, its root job, its
/// image), which is all a report would add to a hit. nullopt: no such hit.
std::optional<Loaded> load_memo_root(kiln_cache& c, storage::Records& records,
                                     const Hash128& memo, const CompileRequest& req) {
  auto root = memo::memo_single_root(records, memo);
  if (!root || !*root)
    return std::nullopt;
  auto img = runtime::load_image(c, (*root)->closure.hex(), (*root)->target);
  if (!img)
    return std::nullopt;
  CompileReport rep;
  rep.memo_hit = true;
  RootReport rr;
  rr.name = std::move((*root)->name);
  rr.target = std::move((*root)->target);
  rr.closure = (*root)->closure.hex();
  rr.image = true;
  // As every path leaves it (memo/record.h); a read-only cache still loads.
  (void)memo::point_root(records, rr, (*root)->closure, memo::unit_of(req));
  rep.roots.push_back(std::move(rr));
  return Loaded{Image::adopt(img.take().release()), std::move(rep), true};
}

/// The memoised report of a request with one root, and that root's closure
/// loaded. nullopt: no such hit.
std::optional<Loaded> load_memo_report(kiln_cache& c, storage::Records& records,
                                       const Hash128& memo, const CompileRequest& req) {
  auto hit = memo::memo_lookup(records, memo);
  if (!hit || !*hit || (*hit)->report.roots.size() != 1)
    return std::nullopt;
  CompileReport& rep = (*hit)->report;
  RootReport& root = rep.roots.front();
  auto img = runtime::load_image(c, root.closure, root.target);
  if (!img)
    return std::nullopt;
  root.image = true;
  if (auto k = parse_hash128(root.closure))
    (void)memo::point_root(records, root, *k, memo::unit_of(req));
  return Loaded{Image::adopt(img.take().release()), std::move(rep), true};
}

/// The planned root's closure, when the cache holds it: the closure key
/// follows from the unit alone, so its jobs are there too, and loading it is
/// the whole answer. nullopt: the closure is not stored.
Result<std::optional<Loaded>> load_planned(kiln_cache& c, storage::Records& records,
                                           const std::optional<Hash128>& memo, const Plan& plan,
                                           CompileReport& described, const CompileRequest& req) {
  const RootReport& root = described.roots.front();
  auto img = runtime::load_image(c, root.closure, root.target);
  if (!img && img.error().code != Code::not_found)
    return about_root(img.error(), root);
  if (!img)
    return std::optional<Loaded>();
  for (JobReport& j : described.jobs)
    j.status = JobStatus::cached;
  RootReport& rr = described.roots.front();
  rr.image = true;
  // The name points at what was answered, as a precompile leaves it. A
  // read-only cache, or one whose closure a gc took since, still loads.
  if (auto k = parse_hash128(rr.closure))
    (void)memo::point_root(records, rr, *k, memo::unit_of(req));
  request::record(records, memo, plan, described);
  return std::optional<Loaded>(
      Loaded{Image::adopt(img.take().release()), std::move(described), true});
}

/// Compiles, stores and links the plan's jobs, then loads its root.
Result<Loaded> compile_and_load(kiln_cache& c, storage::Records& records,
                                const std::optional<Hash128>& memo, Plan& plan,
                                const CompileReport& described) {
  auto report = request::run(plan, records);
  if (!report)
    return about_root(report.error(), described.roots.front());
  request::record(records, memo, plan, *report);
  if (auto failed = report->first_failure())
    return *failed;
  const RootReport& root = report->roots.front();
  auto img = runtime::load_image(c, root.closure, root.target);
  if (!img)
    return about_root(img.error(), root);
  return Loaded{Image::adopt(img.take().release()), report.take(), false};
}

Result<Loaded> compile_or_load_in(kiln_cache& c, std::span<const Source> sources,
                                  std::string_view entry, std::string_view target,
                                  const JitOptions& options, bool want_report = true) {
  if (entry.empty())
    return make_error(Code::invalid_argument, "compile_or_load: no entry named");
  if (sources.empty())
    return make_error(Code::invalid_argument, "compile_or_load: no sources");
  KILN_TRY_ASSIGN(storage::Storage * st, c.store());
  storage::Records& records = st->records();
  const CompileRequest req = request_for(sources, entry, target, options);

  // The request memo: a request seen before names its closure without the
  // IR being parsed at all.
  std::optional<Hash128> memo = memo::memo_key(req);
  if (memo) {
    std::optional<Loaded> hit = want_report ? load_memo_report(c, records, *memo, req)
                                            : load_memo_root(c, records, *memo, req);
    if (hit)
      return std::move(*hit);
  }

  // Plan::create, not request::plan: a compile-or-load usually only loads, so it
  // starts no code generation worker before a job needs one.
  KILN_TRY_ASSIGN(auto plan, Plan::create(req));
  CompileReport described = plan.describe();
  if (described.roots.size() != 1)
    return make_error(Code::internal, "compile_or_load: expected one root, planned " +
                                          std::to_string(described.roots.size()));
  KILN_TRY_ASSIGN(std::optional<Loaded> stored,
                  load_planned(c, records, memo, plan, described, req));
  if (stored)
    return std::move(*stored);
  return compile_and_load(c, records, memo, plan, described);
}

} // namespace

Result<Loaded> compile_or_load(const Cache& cache, std::span<const Source> sources,
                               std::string_view entry, std::string_view target,
                               const JitOptions& options) {
  if (!cache.raw())
    return make_error(Code::invalid_argument, "compile_or_load: the cache handle is empty");
  return compile_or_load_in(*cache.raw(), sources, entry, target, options);
}


} // namespace kiln

// --- the C API ----------------------------------------------------------------

struct kiln_compile_result {
  kiln::CompileReport report;
  std::vector<kiln_job_info> jobs;
  std::vector<kiln_root_info> roots;
  std::vector<kiln_library_info> libraries;
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

// The live results this library handed out, so that a result freed
// already, or a pointer that never was one, is refused (runtime/handle_set.h).
constinit kiln::runtime::HandleSet<1024> g_results;

// A result argument that is not live: `fn` refuses it.
[[gnu::cold]] kiln_status result_not_live(const char* fn) {
  return fail_argument(std::string(fn) +
                       ": result is not a live kiln_compile_result (freed, or never returned "
                       "by kiln_compile or kiln_compile_or_load)");
}

// Whether `result` may be read; if not (and not NULL), the last error says
// why. For the calls whose answer (a count, a flag) has no status.
bool live_result(const char* fn, const kiln_compile_result* result) {
  if (!result)
    return false;
  if (g_results.contains(result)) [[likely]]
    return true;
  clear_error();
  result_not_live(fn);
  return false;
}

// A cache argument that is not a live handle (libkiln's registry), or KILN_OK.
kiln_status check_cache(const char* fn, kiln_cache* cache) {
  if (kiln::runtime::handle_live(kiln::runtime::HandleType::cache, cache))
    return KILN_OK;
  return fail_argument(
      kiln::runtime::not_live_message(fn, "cache", kiln::runtime::HandleType::cache));
}

// The size of a struct whose last field ends at byte `end`: sizeof of the
// struct as it was released when that field was its last.
template <class T> constexpr size_t released_size(size_t end) {
  return (end + alignof(T) - 1) / alignof(T) * alignof(T);
}

// Every struct_size a release of kiln_compiler.h has given each struct: ABI
// 1's, where struct_size began, and so far the only one. A field appended
// later adds an entry (its struct's new sizeof); the static_asserts below
// fail until it does. A size in no list is garbage (never set, a pointer,
// an FFI's layout gone wrong) or from a newer header than this library's,
// and reading or writing by it could run off the caller's struct.
constexpr size_t kOptionsSizes[] = {released_size<kiln_compile_options>(
    offsetof(kiln_compile_options, shard_count) + sizeof(unsigned))};
constexpr size_t kJobInfoSizes[] = {
    released_size<kiln_job_info>(offsetof(kiln_job_info, ref_count) + sizeof(size_t))};
constexpr size_t kRootInfoSizes[] = {
    released_size<kiln_root_info>(offsetof(kiln_root_info, error) + sizeof(const char*))};
constexpr size_t kLibraryInfoSizes[] = {
    released_size<kiln_library_info>(offsetof(kiln_library_info, error) + sizeof(const char*))};
static_assert(std::end(kOptionsSizes)[-1] == sizeof(kiln_compile_options) &&
                  std::end(kJobInfoSizes)[-1] == sizeof(kiln_job_info) &&
                  std::end(kRootInfoSizes)[-1] == sizeof(kiln_root_info) &&
                  std::end(kLibraryInfoSizes)[-1] == sizeof(kiln_library_info),
              "a struct of kiln_compiler.h changed size: add its new size to its list");

// A struct_size this library cannot honour, or KILN_OK.
template <size_t N>
kiln_status check_size(const char* fn, const char* type, size_t size,
                       const size_t (&released)[N]) {
  std::string known;
  for (size_t r : released) {
    if (size == r)
      return KILN_OK;
    known += (known.empty() ? "" : ", ") + std::to_string(r);
  }
  return fail_argument(
      std::string(fn) + ": " + type + ".struct_size is " + std::to_string(size) +
      ", not a size any release of kiln_compiler.h gave it (this libkiln-compiler knows " +
      known + "): set it to sizeof(" + type + ")" +
      (std::string_view(type) == "kiln_compile_options" ? " with kiln_compile_options_init"
                                                        : "") +
      "; a program built against a newer kiln_compiler.h needs a libkiln-compiler at least "
      "as new");
}

// The caller's options over this library's defaults: the bytes its
// struct_size covers (a released size, so never more than this library's).
kiln_status sized_options(const char* fn, const kiln_compile_options* in,
                          kiln_compile_options& out) {
  kiln_compile_options_init_size(&out, sizeof out);
  size_t n = in->struct_size;
  if (kiln_status st = check_size(fn, "kiln_compile_options", n, kOptionsSizes); st != KILN_OK)
    return st;
  std::memcpy(&out, in, std::min(n, sizeof out));
  out.struct_size = sizeof out;
  return KILN_OK;
}

// Fills the caller's struct with `value`, as far as its struct_size (a
// released size) reaches.
template <class Info, size_t N>
kiln_status sized_write(const char* fn, const char* type, const size_t (&released)[N],
                        const Info& value, Info* out) {
  size_t n = out->struct_size;
  if (kiln_status st = check_size(fn, type, n, released); st != KILN_OK)
    return st;
  std::memcpy(out, &value, std::min(n, sizeof value));
  out->struct_size = n;
  return KILN_OK;
}

kiln_status read_options(const char* fn, const kiln_compile_options* given, Views& v,
                         kiln_compile_options& options) {
  if (!given)
    return fail_argument(std::string(fn) + ": options is NULL");
  if (kiln_status st = sized_options(fn, given, options); st != KILN_OK)
    return st;
  const kiln_compile_options* o = &options;
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
  auto owned = std::make_unique<kiln_compile_result>(
      kiln_compile_result{std::move(report), {}, {}, {}});
  kiln_compile_result* r = owned.get();
  for (const kiln::JobReport& j : r->report.jobs)
    r->jobs.push_back({sizeof(kiln_job_info), j.key.c_str(), j.entry.c_str(), j.target.c_str(),
                       j.symbol.c_str(), static_cast<kiln_job_status>(j.status),
                       j.error.c_str(), j.compile_ms, j.refs.size()});
  for (const kiln::RootReport& x : r->report.roots)
    r->roots.push_back({sizeof(kiln_root_info), x.name.c_str(), x.target.c_str(),
                        x.closure.c_str(), x.image ? 1 : 0, x.note.c_str(), x.error.c_str()});
  for (const kiln::LibraryReport& l : r->report.libraries)
    r->libraries.push_back({sizeof(kiln_library_info), l.name.c_str(), l.target.c_str(),
                            l.closure.c_str(), l.roots, l.members, l.image ? 1 : 0,
                            l.note.c_str(), l.error.c_str()});
  g_results.add(r);
  return owned.release();
}

// Element `index` of a result's list, written to the caller's sized struct.
template <class Info, size_t N>
kiln_status result_item(const char* fn, const char* type, const size_t (&released)[N],
                        const kiln_compile_result* result,
                        std::vector<Info> kiln_compile_result::*member, const char* what,
                        size_t index, Info* out) {
  if (!result || !out)
    return fail_argument(std::string(fn) + ": result and out must not be NULL");
  if (!g_results.contains(result))
    return result_not_live(fn);
  // The caller's struct is checked before the index: a size that is wrong
  // is wrong for every index.
  if (kiln_status st = check_size(fn, type, out->struct_size, released); st != KILN_OK)
    return st;
  const std::vector<Info>* list = &(result->*member);
  if (index >= list->size())
    return fail(kiln::make_error(kiln::Code::not_found,
                                 std::string(fn) + ": index " + std::to_string(index) +
                                     " is past the " + std::to_string(list->size()) + " " +
                                     what));
  return sized_write(fn, type, released, (*list)[index], out);
}

static_assert(int(kiln::JobStatus::compiled) == KILN_JOB_COMPILED &&
              int(kiln::JobStatus::cached) == KILN_JOB_CACHED &&
              int(kiln::JobStatus::failed) == KILN_JOB_FAILED);

} // namespace

extern "C" {

void kiln_compile_options_init_size(kiln_compile_options* options, size_t size) {
  if (!options)
    return;
  // Not a released size: nothing is written (the caller's struct may be
  // smaller than `size`), and the struct_size it keeps is refused by the
  // call it is passed to.
  try {
    if (check_size("kiln_compile_options_init_size", "kiln_compile_options", size,
                   kOptionsSizes) != KILN_OK)
      return;
  } catch (...) {
    return; // out of memory for the message: the size is still refused
  }
  kiln_compile_options d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = size;
  d.opt_level = 2;
  d.link_images = 1;
  d.must_hit = kiln::must_hit_from_environment() ? 1 : 0;
  d.shard_count = 1;
  std::memset(options, 0, size);
  std::memcpy(options, &d, std::min(size, sizeof d));
}

kiln_status kiln_compile(kiln_cache* cache, const kiln_compile_options* options,
                         kiln_compile_result** out) {
  return kiln::runtime::c_entry("kiln_compile", [&]() -> kiln_status {
    clear_error();
    if (!cache || !out)
      return fail_argument("kiln_compile: cache and out must not be NULL");
    *out = nullptr;
    if (kiln_status st = check_cache("kiln_compile", cache); st != KILN_OK)
      return st;
    Views v;
    kiln_compile_options o;
    if (kiln_status st = read_options("kiln_compile", options, v, o); st != KILN_OK)
      return st;
    kiln::CompileRequest req;
    for (const kiln::Source& s : v.sources)
      req.inputs.push_back(kiln::SourceInput::memory(std::string(s.name), std::string(s.bytes)));
    req.entries = v.entries;
    if (!v.targets.empty())
      req.targets = v.targets;
    req.opt_level = o.opt_level;
    req.debug = o.debug != 0;
    req.jobs = o.jobs;
    req.link_images = o.link_images != 0;
    req.must_hit = o.must_hit != 0;
    req.library = o.library ? o.library : "";
    req.remote = o.remote ? o.remote : "";
    req.remote_read_only = o.remote_read_only != 0;
    req.shard_index = o.shard_index;
    req.shard_count = o.shard_count ? o.shard_count : 1;
    auto opened = cache->store();
    if (!opened)
      return fail(opened.error());
    auto report = kiln::request::answer(req, {"", &(*opened)->records()});
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
    if (kiln_status st = check_cache("kiln_compile_or_load", cache); st != KILN_OK)
      return st;
    Views v;
    kiln_compile_options o;
    if (kiln_status st = read_options("kiln_compile_or_load", options, v, o); st != KILN_OK)
      return st;
    if (!v.entries.empty() || !v.targets.empty())
      return fail_argument("kiln_compile_or_load: options name entries or targets; this call "
                           "takes the one entry and target as arguments");
    if ((o.library && *o.library) || o.shard_count > 1)
      return fail_argument("kiln_compile_or_load: options name a library or shards; this call "
                           "loads one root, compiled whole (use kiln_compile for those)");
    kiln::JitOptions jit;
    jit.opt_level = o.opt_level;
    jit.debug = o.debug != 0;
    jit.jobs = o.jobs;
    jit.must_hit = o.must_hit != 0;
    jit.remote = o.remote ? o.remote : "";
    jit.remote_read_only = o.remote_read_only != 0;
    auto loaded = kiln::compile_or_load_in(*cache, v.sources, entry, target ? target : "", jit,
                                           report != nullptr);
    if (!loaded)
      return fail(loaded.error());
    *out = loaded->image.release();
    if (report)
      *report = make_result(std::move(loaded->report));
    return KILN_OK;
  }, report_internal);
}

int kiln_compile_result_ok(const kiln_compile_result* result) {
  return live_result("kiln_compile_result_ok", result) && result->report.ok() ? 1 : 0;
}

size_t kiln_compile_result_job_count(const kiln_compile_result* result) {
  return live_result("kiln_compile_result_job_count", result) ? result->jobs.size() : 0;
}

kiln_status kiln_compile_result_job(const kiln_compile_result* result, size_t index,
                                    kiln_job_info* out) {
  return kiln::runtime::c_entry("kiln_compile_result_job", [&]() -> kiln_status {
    clear_error();
    return result_item("kiln_compile_result_job", "kiln_job_info", kJobInfoSizes, result,
                       &kiln_compile_result::jobs, "jobs", index, out);
  }, report_internal);
}

kiln_status kiln_compile_result_job_ref(const kiln_compile_result* result, size_t job,
                                        size_t ref, const char** symbol, const char** key) {
  return kiln::runtime::c_entry("kiln_compile_result_job_ref", [&]() -> kiln_status {
    clear_error();
    if (!result || !symbol || !key)
      return fail_argument("kiln_compile_result_job_ref: result, symbol and key must not be NULL");
    if (!g_results.contains(result))
      return result_not_live("kiln_compile_result_job_ref");
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
  return live_result("kiln_compile_result_root_count", result) ? result->roots.size() : 0;
}

kiln_status kiln_compile_result_root(const kiln_compile_result* result, size_t index,
                                     kiln_root_info* out) {
  return kiln::runtime::c_entry("kiln_compile_result_root", [&]() -> kiln_status {
    clear_error();
    return result_item("kiln_compile_result_root", "kiln_root_info", kRootInfoSizes, result,
                       &kiln_compile_result::roots, "roots", index, out);
  }, report_internal);
}

size_t kiln_compile_result_library_count(const kiln_compile_result* result) {
  return live_result("kiln_compile_result_library_count", result) ? result->libraries.size()
                                                                  : 0;
}

kiln_status kiln_compile_result_library(const kiln_compile_result* result, size_t index,
                                        kiln_library_info* out) {
  return kiln::runtime::c_entry("kiln_compile_result_library", [&]() -> kiln_status {
    clear_error();
    return result_item("kiln_compile_result_library", "kiln_library_info", kLibraryInfoSizes,
                       result, &kiln_compile_result::libraries, "libraries", index, out);
  }, report_internal);
}

void kiln_compile_result_free(kiln_compile_result* result) {
  if (!result)
    return;
  // Taken out first: of two frees of one result, exactly one deletes it.
  if (!g_results.take(result)) {
    clear_error();
    result_not_live("kiln_compile_result_free");
    return;
  }
  delete result;
}

int kiln_compiler_abi_version(void) { return KILN_COMPILER_SOVERSION_NUMBER; }
static_assert(KILN_COMPILER_ABI_VERSION == KILN_COMPILER_SOVERSION_NUMBER,
              "kiln_compiler.h's KILN_COMPILER_ABI_VERSION must be libkiln-compiler's soversion "
              "(KILN_COMPILER_SOVERSION)");

const kiln_error_info* kiln_compile_last_error(void) { return &t_error.view; }

const char* kiln_present_target(void) {
  static const std::string target = kiln::present_target(); // devices do not come and go
  return target.c_str();
}

const char* kiln_job_status_name(kiln_job_status status) {
  return kiln::job_status_name(static_cast<kiln::JobStatus>(status));
}

} // extern "C"
