// The admin API (kiln/admin.hpp): each call is one view of the cache behind
// a kiln::Cache, made from the storage, image and runtime layers' reports.
#include "image/export.h"
#include "runtime/handles.h"
#include "runtime/portable.h"
#include "storage/catalog.h"
#include "storage/gc.h"
#include "storage/records.h"
#include "storage/transfer.h"
#include "storage/usage.h"
#include "storage/verify.h"
#include "storage/signing.h"
#include "support/units.h"

#include <kiln/admin.hpp>

namespace kiln::admin {

namespace {

using storage::Records;

/// The cache's records, its file opened now if a handle that had only
/// read published images (storage/published/published.h) had not opened it yet.
Result<Records*> records_of(const Cache& cache) {
  KILN_TRY_ASSIGN(storage::Storage * st, cache.raw()->store());
  return &st->records();
}

/// The store of a call that writes (`what`, as a read-only refusal names
/// it): refused on a read-only cache, else it closes as a writer does.
Result<Records*> writable(const Cache& cache, const std::string& what) {
  KILN_TRY_ASSIGN(Records * sp, records_of(cache));
  Records& s = *sp;
  if (s.read_only())
    return s.read_only_error(what);
  s.end_deferral();
  return &s;
}

/// The store of a call that may write (an image linked and stored): it
/// closes as a writer does unless it is read-only.
Result<Records*> may_write(const Cache& cache) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  if (!s->read_only())
    s->end_deferral();
  return s;
}

std::vector<Artifact> artifacts_of(const std::vector<core::ArtifactInfo>& in) {
  std::vector<Artifact> out;
  for (const auto& a : in)
    out.push_back({a.format, a.raw_size, a.stored_size});
  return out;
}

std::vector<Reference> refs_of(const std::vector<core::JobRef>& in) {
  std::vector<Reference> out;
  for (const auto& r : in)
    out.push_back({r.symbol, r.entry});
  return out;
}

std::vector<Member> members_of(const core::ClosureRecord& c) {
  std::vector<Member> out;
  for (const auto& m : c.members)
    out.push_back({m.symbol, m.entry, m.job.hex()});
  return out;
}

Job job_of(const core::JobRecord& r) {
  Job j;
  j.key = r.key.hex();
  j.entry = r.entry;
  j.target = r.target;
  j.options = r.options;
  j.toolchain = r.toolchain;
  j.module_hash = r.module_hash.hex();
  j.symbol = r.symbol;
  j.triple = r.triple;
  j.cpu = r.cpu;
  j.compile_ms = r.compile_ms;
  return j;
}

Library library_of(const core::LibraryRecord& l) {
  Library out;
  out.name = l.name;
  out.target = l.target;
  out.closure = l.closure.hex();
  out.roots = l.roots;
  return out;
}

ExportedImage exported_of(const image::ExportedImage& e, const std::string& path) {
  return {e.closure.key.hex(), e.closure.target, path, e.closure.members.size(), e.bytes};
}

Portability portability_of(const runtime::PortabilityReport& r) {
  Portability out;
  out.loadable = r.loadable;
  for (const auto& c : r.closures)
    out.closures.push_back({c.closure.hex(), c.target, c.cpu, c.names, c.loadable, c.component,
                            c.reason, c.missing, c.unknown});
  return out;
}

/// A library's target when none is given: its first.
Result<std::string> library_target(Records& s, const std::string& name, const std::string& target) {
  if (!target.empty())
    return target;
  KILN_TRY_ASSIGN(auto libs, s.images().list_libraries(name));
  if (libs.empty())
    return make_error(Code::not_found,
                      "no library named '" + name + "' in cache '" + s.path() + "'");
  return libs.front().target;
}

} // namespace

Result<Listing> list(const Cache& cache, const ListFilter& filter) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  KILN_TRY_ASSIGN(auto l, storage::list_cache(*s, {filter.target, filter.name_glob}));
  Listing out;
  for (auto& j : l.jobs) {
    ListedJob lj;
    lj.job = job_of(j.record);
    if (j.artifacts)
      lj.artifacts = artifacts_of(*j.artifacts);
    else
      lj.artifacts = j.artifacts.error();
    if (j.refs)
      lj.refs = refs_of(*j.refs);
    else
      lj.refs = j.refs.error();
    out.jobs.push_back(std::move(lj));
  }
  for (const auto& n : l.names)
    out.names.push_back({n.name, n.target, n.closure.hex()});
  return out;
}

Result<Entry> show(const Cache& cache, const std::string& what, const std::string& target) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  KILN_TRY_ASSIGN(auto found, storage::find_entry(*s, what, target));
  if (const auto* d = std::get_if<storage::JobDetail>(&found)) {
    Job j = job_of(d->record);
    j.artifacts = artifacts_of(d->artifacts);
    j.refs = refs_of(d->refs);
    return Entry(std::move(j));
  }
  const auto& r = std::get<storage::RootDetail>(found);
  return Entry(Root{r.name, r.target, r.closure.key.hex(), r.closure.root_job.hex(), r.unit,
                    members_of(r.closure)});
}

Result<Graph> graph(const Cache& cache, const std::string& what, const std::string& target) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  KILN_TRY_ASSIGN(auto g, storage::closure_graph(*s, what, target));
  Graph out;
  out.closure = g.closure.key.hex();
  out.root_job = g.closure.root_job.hex();
  out.target = g.closure.target;
  out.members = members_of(g.closure);
  for (const auto& e : g.edges)
    out.edges.push_back({e.from.hex(), e.to.hex(), e.symbol});
  return out;
}

Result<std::vector<Library>> libraries(const Cache& cache) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  KILN_TRY_ASSIGN(auto libs, s->images().list_libraries());
  std::vector<Library> out;
  for (const auto& l : libs)
    out.push_back(library_of(l));
  return out;
}

Result<Library> library(const Cache& cache, const std::string& name, const std::string& target) {
  KILN_TRY_ASSIGN(Records * sp, records_of(cache));
  Records& s = *sp;
  KILN_TRY_ASSIGN(std::string t, library_target(s, name, target));
  KILN_TRY_ASSIGN(auto lib, s.images().get_library(name, t));
  auto closure = s.closures().get_closure(lib.closure);
  if (!closure)
    return closure.error().context("library '" + name + "' (" + t + ")");
  auto images = s.images().images_of(lib.closure);
  Library out = library_of(lib);
  out.members = members_of(*closure);
  out.images = images ? images->size() : 0;
  return out;
}

Result<ExportedImage> export_image(const Cache& cache, const std::string& what,
                                   const std::string& target, const std::string& path) {
  KILN_TRY_ASSIGN(Records * w, may_write(cache));
  KILN_TRY_ASSIGN(auto e, image::export_image(*w, what, target, path));
  return exported_of(e, path);
}

Result<ExportedImage> export_library_image(const Cache& cache, const std::string& name,
                                           const std::string& target, const std::string& path) {
  KILN_TRY_ASSIGN(Records * sp, may_write(cache));
  Records& s = *sp;
  KILN_TRY_ASSIGN(std::string t, library_target(s, name, target));
  KILN_TRY_ASSIGN(auto e, image::export_library_image(s, name, t, path));
  return exported_of(e, path);
}

Result<std::string> dump(const Cache& cache, const std::string& job_key,
                         const std::string& format) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  return storage::dump_artifact(*s, job_key, format);
}

Result<Stats> stats(const Cache& cache, bool zero_first) {
  if (!cache.raw())
    return make_error(Code::invalid_argument, "stats: the cache handle is empty");
  cache.raw()->flush_usage(); // this handle's own loads count too
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  if (zero_first) {
    KILN_TRY_ASSIGN(s, writable(cache, "run stats --zero"));
  }
  KILN_TRY_ASSIGN(auto rep, storage::stats_report(*s, zero_first));
  const storage::Stats& st = rep.stats;
  const storage::Counters& c = st.counters;
  Stats out;
  out.cache = s->path();
  out.jobs = st.jobs;
  out.closures = st.closures;
  out.images = st.images;
  out.names = st.names;
  out.stored_bytes = st.stored_bytes;
  out.raw_bytes = st.raw_bytes;
  out.file_bytes = st.file_bytes;
  out.live_bytes = st.live_bytes;
  out.max_size = rep.max_size;
  out.ratio = st.compression_ratio();
  out.jobs_per_target = st.jobs_per_target;
  out.counters = {c.job_hits,    c.job_misses,      c.image_hits,       c.image_misses,
                  c.loads,       c.remote_hits,     c.remote_misses,    c.remote_bytes_in,
                  c.remote_bytes_out, c.remote_errors};
  return out;
}

Result<VerifyReport> verify(const Cache& cache) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  KILN_TRY_ASSIGN(auto rep, storage::verify_cache(*s));
  VerifyReport out;
  for (auto& p : rep.problems)
    out.problems.push_back({std::move(p.kind), std::move(p.key), std::move(p.message)});
  out.jobs = rep.jobs;
  out.closures = rep.closures;
  out.schema = storage::schema_version();
  return out;
}

Result<GcReport> gc(const Cache& cache, const GcOptions& options) {
  // Refused on a read-only cache before its arguments are read, a dry run
  // too: what it reports is what gc would do to this cache, which a
  // read-only handle cannot.
  KILN_TRY_ASSIGN(Records * s, writable(cache, "run gc"));
  KILN_TRY_ASSIGN(auto policy, storage::parse_gc_policy(options.max_size, options.older_than));
  policy.dry_run = options.dry_run;
  KILN_TRY_ASSIGN(auto rep, storage::collect_garbage(*s, policy));
  GcReport out;
  out.dry_run = options.dry_run;
  for (const auto& k : rep.evicted_closures)
    out.evicted_closures.push_back(k.hex());
  out.evicted_jobs = rep.evicted_jobs;
  out.evicted_images = rep.evicted_images;
  out.dropped_key_form_names = rep.dropped_key_form_names;
  out.bytes_before = rep.bytes_before;
  out.bytes_after = rep.bytes_after;
  return out;
}

Result<BundleSummary> export_bundle(const Cache& cache, const std::string& file,
                                    const std::vector<std::string>& which) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  KILN_TRY_ASSIGN(auto sum, storage::export_bundle(*s, file, which));
  return BundleSummary{file, sum.closures, sum.jobs, sum.images, sum.names, sum.bytes, true};
}

Result<BundleSummary> import_bundle(const Cache& cache, const std::string& file) {
  KILN_TRY_ASSIGN(Records * s, writable(cache, "run import"));
  KILN_TRY_ASSIGN(auto sum, storage::import_bundle(*s, file));
  return BundleSummary{file, sum.closures, sum.jobs, sum.images, sum.names, 0, false};
}

Result<Portability> check_portable(const Cache& cache) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  KILN_TRY_ASSIGN(auto r, runtime::check_portable(*s));
  return portability_of(r);
}

Result<Portability> check_bundle(const Cache* cache, const std::string& file) {
  Records* s = nullptr;
  if (cache) {
    KILN_TRY_ASSIGN(s, records_of(*cache));
  }
  KILN_TRY_ASSIGN(auto r, runtime::check_bundle_portable(s, file));
  return portability_of(r);
}

Result<Explanation> explain(const Cache& cache, const std::string& key_a,
                            const std::string& key_b) {
  KILN_TRY_ASSIGN(Hash128 a, parse_hash128(key_a));
  KILN_TRY_ASSIGN(Hash128 b, parse_hash128(key_b));
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  KILN_TRY_ASSIGN(auto diffs, storage::explain_keys(*s, a, b));
  Explanation out{key_a, key_b, {}};
  for (const auto& d : diffs)
    out.differences.push_back({d.component, d.a, d.b});
  return out;
}

Result<Settings> settings(const Cache& cache) {
  KILN_TRY_ASSIGN(Records * sp, records_of(cache));
  Records& s = *sp;
  KILN_TRY_ASSIGN(auto limit, storage::size_limit(s));
  KILN_TRY_ASSIGN(auto required, storage::signatures_required(s));
  return Settings{limit.bytes, limit.source, required.required, required.source};
}

Result<Settings> set_setting(const Cache& cache, const std::string& name,
                             const std::string& value) {
  KILN_TRY_ASSIGN(Records * s, records_of(cache));
  if (!value.empty()) {
    KILN_TRY_ASSIGN(s, writable(cache, "run config set"));
  }
  KILN_TRY_ASSIGN(std::string stored, storage::parse_setting(name, value));
  if (!value.empty())
    KILN_TRY(s->upkeep().set_setting(name, stored));
  return settings(cache);
}

std::string human_size(int64_t bytes) { return kiln::human_size(bytes); }

} // namespace kiln::admin
