// Unit tests for the admin API (src/admin/admin.cpp) over real cache files:
// each view carries the records' keys as hex and their fields as stored; a
// library's target defaults to its first; writes (gc, import, stats --zero,
// config set) are refused on a read-only cache before their arguments are
// read; a cache's own loads count in its stats; and what names nothing is
// `not_found`, naming it.
#include "admin/admin_cache.hpp"

#include "core/keys.h"
#include "fixtures/env.hpp"
#include "storage/local/store.h"
#include "storage/records.h"
#include "support/fault.h"
#include "support/files.h"

#include <kiln/admin.hpp>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

const admin::ListedJob* listed(const admin::Listing& l, const core::JobRecord& j) {
  for (const admin::ListedJob& lj : l.jobs)
    if (lj.job.key == j.key.hex())
      return &lj;
  return nullptr;
}

/// nested.ll's nest_a, nest_b and nest_c for the host, recorded as the
/// kernel library "nest" too, with images.
TestCache nest_library(const std::string& prefix) {
  TestCache c = empty_cache(prefix);
  CompileRequest req = data_request("nested.ll", {"nest_a", "nest_b", "nest_c"});
  req.library = "nest";
  c.report = precompile(req, c.path());
  REQUIRE(c.report.libraries.size() == 1);
  return c;
}

} // namespace

TEST_CASE("admin: list gives every job with its artifacts and references, and names as hex") {
  AdminCache a = admin_cache();
  const Populated& r = a.records;
  Cache cache = open_api(a.path());

  admin::Listing all = admin_ok(admin::list(cache));
  CHECK(all.jobs.size() == 5);
  const admin::ListedJob* alpha = listed(all, r.alpha);
  REQUIRE(alpha);
  CHECK(alpha->job.entry == "alpha");
  CHECK(alpha->job.target == "host");
  CHECK(alpha->job.options == "-O2");
  CHECK(alpha->job.module_hash == r.alpha.module_hash.hex());
  CHECK(alpha->job.symbol == r.alpha.symbol);
  REQUIRE(alpha->artifacts);
  REQUIRE(alpha->artifacts->size() == 1);
  CHECK((*alpha->artifacts)[0].format == "obj");
  CHECK((*alpha->artifacts)[0].raw_size == int64_t(std::string("object of alpha, longer").size()));
  CHECK((*alpha->artifacts)[0].stored_size > 0);
  REQUIRE(alpha->refs);
  REQUIRE(alpha->refs->size() == 1);
  CHECK((*alpha->refs)[0].symbol == r.beta.symbol);
  CHECK((*alpha->refs)[0].entry == "beta");

  const admin::ListedJob* gpu = listed(all, r.alpha_gpu);
  REQUIRE(gpu);
  REQUIRE(gpu->artifacts);
  std::vector<std::string> formats;
  for (const admin::Artifact& x : *gpu->artifacts)
    formats.push_back(x.format);
  CHECK(formats == std::vector<std::string>{"cubin", "ptx"});

  // Names by name, then target, each with its closure's key.
  REQUIRE(all.names.size() == 3);
  CHECK(all.names[0].name == "alpha");
  CHECK(all.names[0].target == "host");
  CHECK(all.names[0].closure == r.alpha_closure.key.hex());
  CHECK(all.names[1].target == "sm_90");
  CHECK(all.names[1].closure == r.gpu_closure.key.hex());
  CHECK(all.names[2].name == "gamma");

  // The filter reaches the catalog: by target, and by name glob.
  admin::Listing gpu_only = admin_ok(admin::list(cache, {"sm_90", ""}));
  REQUIRE(gpu_only.jobs.size() == 1);
  CHECK(gpu_only.jobs[0].job.key == r.alpha_gpu.key.hex());
  REQUIRE(gpu_only.names.size() == 1);
  admin::Listing g = admin_ok(admin::list(cache, {"", "g*"}));
  REQUIRE(g.names.size() == 1);
  CHECK(g.names[0].name == "gamma");
  REQUIRE(g.jobs.size() == 1);
  CHECK(g.jobs[0].job.key == r.gamma.key.hex());
}

TEST_CASE("admin: show finds a job by key, a root by name or closure key, and names what it "
          "cannot find") {
  AdminCache a = admin_cache();
  const Populated& r = a.records;
  Cache cache = open_api(a.path());

  admin::Entry job = admin_ok(admin::show(cache, r.alpha.key.hex()));
  REQUIRE(std::holds_alternative<admin::Job>(job));
  const admin::Job& j = std::get<admin::Job>(job);
  CHECK(j.key == r.alpha.key.hex());
  CHECK(j.toolchain == r.alpha.toolchain);
  CHECK(j.triple == "x86_64-unknown-linux-gnu");
  CHECK(j.cpu == "x86-64");
  REQUIRE(j.artifacts.size() == 1);
  CHECK(j.artifacts[0].format == "obj");
  REQUIRE(j.refs.size() == 1);
  CHECK(j.refs[0].entry == "beta");

  admin::Entry by_name = admin_ok(admin::show(cache, "alpha", "sm_90"));
  REQUIRE(std::holds_alternative<admin::Root>(by_name));
  const admin::Root& root = std::get<admin::Root>(by_name);
  CHECK(root.name == "alpha");
  CHECK(root.target == "sm_90");
  CHECK(root.closure == r.gpu_closure.key.hex());
  CHECK(root.root_job == r.alpha_gpu.key.hex());
  REQUIRE(root.members.size() == 1);
  CHECK(root.members[0].key == r.alpha_gpu.key.hex());
  CHECK(root.members[0].symbol == r.alpha_gpu.symbol);

  admin::Entry by_key = admin_ok(admin::show(cache, r.alpha_closure.key.hex()));
  REQUIRE(std::holds_alternative<admin::Root>(by_key));
  const admin::Root& k = std::get<admin::Root>(by_key);
  CHECK(k.closure == r.alpha_closure.key.hex());
  CHECK(k.root_job == r.alpha.key.hex());
  CHECK(k.members.size() == 2);

  auto missing = admin::show(cache, "no_such_root", "host");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  CHECK(contains(missing.error().message, "no_such_root"));
}

TEST_CASE("admin: graph gives a root's members as nodes and its deferred references as edges") {
  AdminCache a = admin_cache();
  const Populated& r = a.records;
  Cache cache = open_api(a.path());

  admin::Graph g = admin_ok(admin::graph(cache, "alpha", "host"));
  CHECK(g.closure == r.alpha_closure.key.hex());
  CHECK(g.root_job == r.alpha.key.hex());
  CHECK(g.target == "host");
  CHECK(g.members.size() == 2);
  REQUIRE(g.edges.size() == 1);
  CHECK(g.edges[0].from == r.alpha.key.hex());
  CHECK(g.edges[0].to == r.beta.key.hex());
  CHECK(g.edges[0].symbol == r.beta.symbol);

  admin::Graph lone = admin_ok(admin::graph(cache, "gamma"));
  CHECK(lone.members.size() == 1);
  CHECK(lone.edges.empty());

  auto missing = admin::graph(cache, "alpha", "gfx90a");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
}

TEST_CASE("admin: libraries and library: roots, members and images; the first target when none "
          "is named") {
  TestCache c = nest_library("kiln-admin-library");
  Cache cache = open_api(c.path());

  std::vector<admin::Library> libs = admin_ok(admin::libraries(cache));
  REQUIRE(libs.size() == 1);
  CHECK(libs[0].name == "nest");
  CHECK(libs[0].target == "host");
  CHECK(libs[0].closure == c.report.libraries[0].closure);
  CHECK(libs[0].roots == std::vector<std::string>{"nest_a", "nest_b", "nest_c"});
  // The listing does not read members or images.
  CHECK(libs[0].members.empty());
  CHECK(libs[0].images == 0);

  admin::Library lib = admin_ok(admin::library(cache, "nest"));
  CHECK(lib.target == "host");
  CHECK(lib.closure == libs[0].closure);
  CHECK(lib.members.size() == 3);
  CHECK(lib.images == 1);
  std::vector<std::string> keys;
  for (const admin::Member& m : lib.members)
    keys.push_back(m.key);
  for (const std::string& e : {"nest_a", "nest_b", "nest_c"})
    CHECK(std::count(keys.begin(), keys.end(), c.job_key(e)) == 1);

  auto none = admin::library(cache, "no_such_library");
  REQUIRE_FALSE(none);
  CHECK(none.error().code == Code::not_found);
  CHECK(contains(none.error().message, "no_such_library"));
  CHECK(contains(none.error().message, c.path()));
  auto other_target = admin::library(cache, "nest", "sm_90");
  REQUIRE_FALSE(other_target);
  CHECK(other_target.error().code == Code::not_found);
}

TEST_CASE("admin: export_image and export_library_image write a loadable image and say what") {
  TestCache c = nest_library("kiln-admin-export");
  Cache cache = open_api(c.path());

  std::string file = c.dir.path() + "/nest_a.so";
  admin::ExportedImage root = admin_ok(admin::export_image(cache, "nest_a", "host", file));
  CHECK(root.path == file);
  CHECK(root.target == "host");
  CHECK(root.members == 3);
  auto bytes = read_file(file);
  REQUIRE(bytes);
  CHECK(root.bytes == bytes->size());
  CHECK(bytes->compare(0, 4, "\x7f" "ELF") == 0);
  std::string closure;
  for (const RootReport& rr : c.report.roots)
    if (rr.name == "nest_a")
      closure = rr.closure;
  CHECK(root.closure == closure);

  std::string lib_file = c.dir.path() + "/nest.so";
  admin::ExportedImage lib = admin_ok(admin::export_library_image(cache, "nest", "", lib_file));
  CHECK(lib.closure == c.report.libraries[0].closure);
  CHECK(lib.target == "host");
  CHECK(lib.members == 3);
  auto lib_bytes = read_file(lib_file);
  REQUIRE(lib_bytes);
  CHECK(lib.bytes == lib_bytes->size());

  // A root that is not there, or a file that cannot be written, writes nothing.
  std::string nothing = c.dir.path() + "/nothing.so";
  auto missing = admin::export_image(cache, "no_such_root", "host", nothing);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  CHECK_FALSE(path_exists(nothing));
  fault::set_plan("file-write");
  auto failed = admin::export_image(cache, "nest_a", "host", nothing);
  fault::set_plan("");
  REQUIRE_FALSE(failed);
  CHECK(contains(failed.error().message, "file-write"));
  CHECK_FALSE(path_exists(nothing));
}

TEST_CASE("admin: dump gives an artifact's stored bytes by the format a user names") {
  AdminCache a = admin_cache();
  const Populated& r = a.records;
  Cache cache = open_api(a.path());

  CHECK(admin_ok(admin::dump(cache, r.alpha.key.hex(), "object")) == "object of alpha, longer");
  CHECK(admin_ok(admin::dump(cache, r.alpha_gpu.key.hex(), "ptx")) == "// ptx of alpha");
  CHECK(admin_ok(admin::dump(cache, r.alpha_gpu.key.hex(), "object")) == "cubin of alpha");

  auto no_ptx = admin::dump(cache, r.alpha.key.hex(), "ptx");
  REQUIRE_FALSE(no_ptx);
  CHECK(no_ptx.error().code == Code::not_found);
  auto bad_key = admin::dump(cache, "not-a-key", "ptx");
  REQUIRE_FALSE(bad_key);
  CHECK(bad_key.error().code == Code::invalid_argument);
}

TEST_CASE("admin: stats counts the records, this handle's own loads, and zeroes the counters "
          "only on a writable cache") {
  TestCache c = nested_cache("kiln-admin-stats");
  Cache cache = open_api(c.path());
  auto image = cache.load("nest_a", "host");
  INFO((image ? std::string() : image.error().message));
  REQUIRE(image);

  admin::Stats s = admin_ok(admin::stats(cache));
  CHECK(s.cache == c.path());
  CHECK(s.jobs == 3);
  CHECK(s.closures == 1);
  CHECK(s.images == 1);
  CHECK(s.names == 1);
  // The load above, which this handle has not closed yet, is counted.
  CHECK(s.counters.loads == 1);
  CHECK(s.counters.image_hits == 1);
  CHECK(s.counters.job_misses == 3);
  CHECK(s.raw_bytes > 0);
  CHECK(s.ratio == doctest::Approx(double(s.stored_bytes) / double(s.raw_bytes)));
  CHECK(s.max_size == storage::kDefaultMaxSize);
  REQUIRE(s.jobs_per_target.size() == 1);
  CHECK(s.jobs_per_target[0] == std::pair<std::string, int64_t>{"host", 3});

  {
    Cache ro = open_api(c.path(), KILN_CACHE_READ_ONLY);
    auto refused = admin::stats(ro, true);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Code::unavailable);
    CHECK(contains(refused.error().message, "stats --zero"));
    CHECK(admin_ok(admin::stats(ro)).counters.loads == 1);
  }

  admin::Stats zeroed = admin_ok(admin::stats(cache, true));
  CHECK(zeroed.counters.loads == 0);
  CHECK(zeroed.counters.job_misses == 0);
  CHECK(zeroed.jobs == 3); // the contents stay
}

TEST_CASE("admin: verify reports counts and the schema on a healthy cache, and each problem by "
          "kind and key") {
  AdminCache a = admin_cache();
  const Populated& r = a.records;
  {
    Cache cache = open_api(a.path());
    admin::VerifyReport ok = admin_ok(admin::verify(cache));
    CHECK(ok.ok());
    CHECK(ok.jobs == 5);
    CHECK(ok.closures == 3);
    CHECK(ok.schema == storage::schema_version());
  }
  // A stored job's options changed behind the store: its key no longer matches.
  REQUIRE(raw_exec(a.path(), "UPDATE jobs SET options = '-O3' WHERE key = x'" + r.gamma.key.hex() +
                                 "'") == 1);
  Cache cache = open_api(a.path());
  admin::VerifyReport bad = admin_ok(admin::verify(cache));
  CHECK_FALSE(bad.ok());
  bool found = false;
  for (const CacheProblem& p : bad.problems)
    found = found || (p.kind == "job" && p.key == r.gamma.key.hex());
  CHECK(found);
}

TEST_CASE("admin: gc evicts, a dry run changes nothing, and a read-only cache refuses both "
          "before reading the limits") {
  AdminCache a = admin_cache();
  const Populated& r = a.records;

  {
    Cache ro = open_api(a.path(), KILN_CACHE_READ_ONLY);
    for (bool dry : {true, false}) {
      auto refused = admin::gc(ro, {"not a size", "", dry});
      REQUIRE_FALSE(refused);
      CHECK(refused.error().code == Code::unavailable);
      CHECK(contains(refused.error().message, "gc"));
    }
  }

  Cache cache = open_api(a.path());
  auto malformed = admin::gc(cache, {"12 parsecs", "", true});
  REQUIRE_FALSE(malformed);
  CHECK(malformed.error().code == Code::invalid_argument);

  // A limit of one byte: everything goes.
  admin::GcReport dry = admin_ok(admin::gc(cache, {"1", "", true}));
  CHECK(dry.dry_run);
  CHECK(dry.evicted_closures.size() == 3);
  CHECK(dry.evicted_jobs == 5);
  for (const std::string& k : dry.evicted_closures)
    CHECK(k.size() == 32);
  CHECK(std::count(dry.evicted_closures.begin(), dry.evicted_closures.end(),
                   r.alpha_closure.key.hex()) == 1);
  CHECK(admin_ok(admin::stats(cache)).closures == 3);

  admin::GcReport done = admin_ok(admin::gc(cache, {"1", "", false}));
  CHECK_FALSE(done.dry_run);
  CHECK(done.evicted_closures == dry.evicted_closures);
  CHECK(done.evicted_jobs == dry.evicted_jobs);
  CHECK(done.bytes_before >= done.bytes_after);
  admin::Stats after = admin_ok(admin::stats(cache));
  CHECK(after.closures == 0);
  CHECK(after.jobs == 0);
}

TEST_CASE("admin: export_bundle and import_bundle carry roots to another cache; a read-only one "
          "refuses the import") {
  AdminCache a = admin_cache();
  const Populated& r = a.records;
  std::string bundle = a.cache.dir.path() + "/alpha.kbundle";
  {
    Cache cache = open_api(a.path());
    admin::BundleSummary out = admin_ok(admin::export_bundle(cache, bundle, {"alpha"}));
    CHECK(out.exported);
    CHECK(out.file == bundle);
    CHECK(out.closures == 2); // alpha on the host and on sm_90
    CHECK(out.jobs == 3);
    CHECK(out.names == 2);
    auto bytes = read_file(bundle);
    REQUIRE(bytes);
    CHECK(out.bytes == bytes->size());
  }

  TestCache other = empty_cache("kiln-admin-import");
  {
    // Opened (and so created) writable once, then read-only.
    Cache created = open_api(other.path());
    CHECK(admin_ok(admin::stats(created)).jobs == 0);
  }
  {
    Cache ro = open_api(other.path(), KILN_CACHE_READ_ONLY);
    auto refused = admin::import_bundle(ro, bundle);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Code::unavailable);
    CHECK(contains(refused.error().message, "import"));
  }
  Cache cache = open_api(other.path());
  admin::BundleSummary in = admin_ok(admin::import_bundle(cache, bundle));
  CHECK_FALSE(in.exported);
  CHECK(in.closures == 2);
  CHECK(in.jobs == 3);
  CHECK(in.names == 2);
  admin::Entry root = admin_ok(admin::show(cache, "alpha", "host"));
  REQUIRE(std::holds_alternative<admin::Root>(root));
  CHECK(std::get<admin::Root>(root).closure == r.alpha_closure.key.hex());

  auto missing = admin::import_bundle(cache, a.cache.dir.path() + "/no_such.kbundle");
  REQUIRE_FALSE(missing);
  CHECK(contains(missing.error().message, "no_such.kbundle"));
}

TEST_CASE("admin: check_portable and check_bundle say which closures this machine could load") {
  TestCache c = nested_cache("kiln-admin-portable");
  Cache cache = open_api(c.path());
  admin::Portability here = admin_ok(admin::check_portable(cache));
  REQUIRE(here.closures.size() == 1);
  CHECK(here.loadable == 1);
  const admin::ClosurePortability& p = here.closures[0];
  CHECK(p.closure == c.root_closure());
  CHECK(p.target == "host");
  CHECK(p.names == std::vector<std::string>{"nest_a"});
  CHECK(p.loadable);
  CHECK(p.component.empty());

  // A host root built for a CPU feature no table knows, on a CPU unlike this
  // one (every x86-64 has SSE2): refused, and why.
  {
    auto store = open_store(c.path());
    core::JobRecord odd = consistent_job("odd");
    odd.features = "+kiln-no-such-feature,-sse2";
    auto comps = core::components_of(odd.module_hash.hex(), odd.entry, odd.target, odd.triple,
                                     odd.cpu, odd.features, odd.options, odd.toolchain);
    REQUIRE(comps);
    odd.symbol = core::deferred_symbol(comps->identity);
    odd.key = core::job_key(*comps);
    REQUIRE(store->jobs().put_job(odd, {{"obj", "object of odd"}}, {}));
    core::ClosureRecord oc = closure_of(odd);
    REQUIRE(store->closures().put_closure(oc, {{"odd", "host", oc.key}}));
  }
  Cache again = open_api(c.path());
  admin::Portability mixed = admin_ok(admin::check_portable(again));
  REQUIRE(mixed.closures.size() == 2);
  CHECK(mixed.loadable == 1);
  const admin::ClosurePortability* odd = nullptr;
  for (const admin::ClosurePortability& x : mixed.closures)
    if (x.names == std::vector<std::string>{"odd"})
      odd = &x;
  REQUIRE(odd);
  CHECK_FALSE(odd->loadable);
  CHECK(odd->component == "cpu");
  CHECK(odd->unknown == std::vector<std::string>{"kiln-no-such-feature"});
  CHECK(contains(odd->reason, "kiln-no-such-feature"));

  // The same answers for a bundle, with or without a cache beside it.
  std::string bundle = c.dir.path() + "/all.kbundle";
  admin_ok(admin::export_bundle(again, bundle));
  for (const Cache* beside : std::vector<const Cache*>{nullptr, &again}) {
    admin::Portability b = admin_ok(admin::check_bundle(beside, bundle));
    CHECK(b.closures.size() == 2);
    CHECK(b.loadable == 1);
  }
  auto missing = admin::check_bundle(nullptr, c.dir.path() + "/no_such.kbundle");
  REQUIRE_FALSE(missing);
}

TEST_CASE("admin: explain reads both keys before the cache and names the differing components") {
  TestCache c = open_cache("kiln-admin-explain");
  core::JobRecord a = consistent_job("alpha", "host", "-O2");
  core::JobRecord b = consistent_job("alpha", "host", "-O3 -g");
  REQUIRE(c.store->jobs().put_job(a, {{"obj", "a"}}, {}));
  REQUIRE(c.store->jobs().put_job(b, {{"obj", "b"}}, {}));
  c.store.reset();
  Cache cache = open_api(c.path());

  admin::Explanation e = admin_ok(admin::explain(cache, a.key.hex(), b.key.hex()));
  CHECK(e.a == a.key.hex());
  CHECK(e.b == b.key.hex());
  REQUIRE(e.differences.size() == 2);
  CHECK(e.differences[0].component == "opt_level");
  CHECK(e.differences[0].a == "2");
  CHECK(e.differences[0].b == "3");
  CHECK(admin_ok(admin::explain(cache, a.key.hex(), a.key.hex())).differences.empty());

  for (auto [x, y] : {std::pair<std::string, std::string>{"zz", b.key.hex()},
                      std::pair<std::string, std::string>{a.key.hex(), ""}}) {
    auto bad = admin::explain(cache, x, y);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == Code::invalid_argument);
  }
  auto unknown = admin::explain(cache, a.key.hex(), hash128("not stored").hex());
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == Code::not_found);
}

TEST_CASE("admin: settings say where each comes from; set_setting parses, stores, and is refused "
          "on a read-only cache") {
  TestCache c = open_cache("kiln-admin-settings");
  c.store.reset();
  EnvVar no_env("KILN_CACHE_MAX_SIZE", nullptr);
  Cache cache = open_api(c.path());

  admin::Settings s = admin_ok(admin::settings(cache));
  CHECK(s.max_size == storage::kDefaultMaxSize);
  CHECK(s.max_size_source == "default");
  CHECK_FALSE(s.require_signed);

  admin::Settings set = admin_ok(admin::set_setting(cache, "max_size", "1M"));
  CHECK(set.max_size == 1048576);
  CHECK(set.max_size_source == "cache setting");
  set = admin_ok(admin::set_setting(cache, "require_signed", "1"));
  CHECK(set.require_signed);
  CHECK(set.max_size == 1048576);

  // An empty value only checks the name.
  CHECK(admin_ok(admin::set_setting(cache, "max_size", "")).max_size == 1048576);
  for (auto [name, value] : {std::pair<std::string, std::string>{"no_such_setting", ""},
                             {"require_signed", "yes"},
                             {"max_size", "lots"}}) {
    auto bad = admin::set_setting(cache, name, value);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == Code::invalid_argument);
  }

  {
    EnvVar env("KILN_CACHE_MAX_SIZE", "2M");
    admin::Settings by_env = admin_ok(admin::settings(cache));
    CHECK(by_env.max_size == 2 * 1048576);
    CHECK(by_env.max_size_source == "KILN_CACHE_MAX_SIZE");
  }

  Cache ro = open_api(c.path(), KILN_CACHE_READ_ONLY);
  auto refused = admin::set_setting(ro, "max_size", "4M");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Code::unavailable);
  CHECK(contains(refused.error().message, "config set"));
  // Reading, and checking a name, are not writes.
  CHECK(admin_ok(admin::set_setting(ro, "max_size", "")).max_size == 1048576);
  CHECK(admin::human_size(1536) == "1.5 KiB");
}
