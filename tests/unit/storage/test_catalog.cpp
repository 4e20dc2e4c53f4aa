// Unit tests for the read commands' view of a cache (src/storage/catalog.h):
// listings filtered by target and name glob, one entry found by job key,
// closure key or name, root names resolved to closures, a root's deferred
// graph (hand-made and as a real precompile stores it), artifacts by the
// format a user names, and which key components two jobs differ in.
#include "storage/catalog.h"

#include "fixtures/cache.hpp"
#include "fixtures/populated.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

std::set<std::string> job_keys(const Listing& l) {
  std::set<std::string> out;
  for (const ListedJob& j : l.jobs)
    out.insert(j.record.key.hex());
  return out;
}

std::vector<std::string> name_rows(const Listing& l) {
  std::vector<std::string> out;
  for (const NameRecord& n : l.names)
    out.push_back(n.name + "/" + n.target + "=" + n.closure.hex());
  return out;
}

Listing list(Store& store, const std::string& target, const std::string& glob) {
  auto l = list_cache(store, {target, glob});
  INFO((l ? std::string() : l.error().message));
  REQUIRE(l);
  return l.take();
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("catalog: an unfiltered listing holds every job and every name, names ordered") {
  TestCache c = open_cache();
  Listing empty = list(*c.store, "", "");
  CHECK(empty.jobs.empty());
  CHECK(empty.names.empty());

  Populated p = populate(*c.store);
  Listing all = list(*c.store, "", "");
  CHECK(job_keys(all) == std::set<std::string>{p.alpha.key.hex(), p.beta.key.hex(),
                                               p.gamma.key.hex(), p.alpha_gpu.key.hex(),
                                               p.orphan.key.hex()});
  CHECK(name_rows(all) ==
        std::vector<std::string>{"alpha/host=" + p.alpha_closure.key.hex(),
                                 "alpha/sm_90=" + p.gpu_closure.key.hex(),
                                 "gamma/host=" + p.gamma_closure.key.hex()});
  // Each job carries its own artifacts and open references.
  for (const ListedJob& j : all.jobs) {
    CAPTURE(j.record.entry);
    REQUIRE(j.artifacts);
    REQUIRE(j.refs);
    if (j.record.key == p.alpha.key) {
      REQUIRE(j.artifacts->size() == 1);
      CHECK((*j.artifacts)[0].format == "obj");
      CHECK((*j.artifacts)[0].raw_size == int64_t(std::string("object of alpha, longer").size()));
      CHECK((*j.artifacts)[0].stored_size > 0);
      REQUIRE(j.refs->size() == 1);
      CHECK((*j.refs)[0].symbol == p.beta.symbol);
      CHECK((*j.refs)[0].entry == "beta");
    } else if (j.record.key == p.alpha_gpu.key) {
      CHECK(j.artifacts->size() == 2);
      CHECK(j.refs->empty());
    } else {
      CHECK(j.artifacts->size() == 1);
      CHECK(j.refs->empty());
    }
  }
}

TEST_CASE("catalog: a listing by target, by name glob, and by both") {
  TestCache c = open_cache();
  Populated p = populate(*c.store);

  Listing gpu = list(*c.store, "sm_90", "");
  CHECK(job_keys(gpu) == std::set<std::string>{p.alpha_gpu.key.hex()});
  CHECK(name_rows(gpu) == std::vector<std::string>{"alpha/sm_90=" + p.gpu_closure.key.hex()});

  // A glob keeps the names it matches and the jobs their closures hold:
  // not the orphan, not gamma.
  Listing alpha = list(*c.store, "", "al*");
  CHECK(job_keys(alpha) == std::set<std::string>{p.alpha.key.hex(), p.beta.key.hex(),
                                                 p.alpha_gpu.key.hex()});
  CHECK(name_rows(alpha) == std::vector<std::string>{"alpha/host=" + p.alpha_closure.key.hex(),
                                                     "alpha/sm_90=" + p.gpu_closure.key.hex()});

  Listing alpha_host = list(*c.store, "host", "al*");
  CHECK(job_keys(alpha_host) == std::set<std::string>{p.alpha.key.hex(), p.beta.key.hex()});
  CHECK(name_rows(alpha_host) ==
        std::vector<std::string>{"alpha/host=" + p.alpha_closure.key.hex()});

  Listing host = list(*c.store, "host", "");
  CHECK(job_keys(host) == std::set<std::string>{p.alpha.key.hex(), p.beta.key.hex(),
                                                p.gamma.key.hex(), p.orphan.key.hex()});
  CHECK(host.names.size() == 2);

  Listing none = list(*c.store, "", "zeta*");
  CHECK(none.jobs.empty());
  CHECK(none.names.empty());
  Listing other_target = list(*c.store, "gfx942", "");
  CHECK(other_target.jobs.empty());
  CHECK(other_target.names.empty());
}

TEST_CASE("catalog: find_entry finds a job by key, a closure by key, a root by name") {
  TestCache c = open_cache();
  Populated p = populate(*c.store);

  auto job = find_entry(*c.store, p.alpha.key.hex(), "");
  REQUIRE(job);
  REQUIRE(std::holds_alternative<JobDetail>(*job));
  const JobDetail& jd = std::get<JobDetail>(*job);
  CHECK(jd.record.key == p.alpha.key);
  CHECK(jd.record.entry == "alpha");
  CHECK(jd.record.symbol == p.alpha.symbol);
  REQUIRE(jd.artifacts.size() == 1);
  CHECK(jd.artifacts[0].format == "obj");
  REQUIRE(jd.refs.size() == 1);
  CHECK(jd.refs[0].entry == "beta");

  auto closure = find_entry(*c.store, p.gamma_closure.key.hex(), "");
  REQUIRE(closure);
  REQUIRE(std::holds_alternative<RootDetail>(*closure));
  const RootDetail& by_key = std::get<RootDetail>(*closure);
  CHECK(by_key.name.empty());
  CHECK(by_key.target == "host");
  CHECK(by_key.closure.key == p.gamma_closure.key);
  CHECK(by_key.closure.root_job == p.gamma.key);

  // A name's first target when none is given (targets in order), else that target's.
  auto first = find_entry(*c.store, "alpha", "");
  REQUIRE(first);
  REQUIRE(std::holds_alternative<RootDetail>(*first));
  CHECK(std::get<RootDetail>(*first).name == "alpha");
  CHECK(std::get<RootDetail>(*first).target == "host");
  CHECK(std::get<RootDetail>(*first).closure.key == p.alpha_closure.key);
  CHECK(std::get<RootDetail>(*first).closure.members.size() == 2);
  auto gpu = find_entry(*c.store, "alpha", "sm_90");
  REQUIRE(gpu);
  CHECK(std::get<RootDetail>(*gpu).target == "sm_90");
  CHECK(std::get<RootDetail>(*gpu).closure.key == p.gpu_closure.key);
}

TEST_CASE("catalog: find_entry of nothing by that key or name is not_found, naming it") {
  TestCache c = open_cache();
  populate(*c.store);
  for (const std::string& what : {std::string("zeta"), hash128("nothing stored").hex()}) {
    CAPTURE(what);
    auto missing = find_entry(*c.store, what, "");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Code::not_found);
    CHECK(contains(missing.error().message, "'" + what + "'"));
    CHECK(contains(missing.error().message, c.path()));
  }
  // A root that exists, but not for that target.
  auto wrong_target = find_entry(*c.store, "gamma", "sm_90");
  REQUIRE_FALSE(wrong_target);
  CHECK(wrong_target.error().code == Code::not_found);
}

TEST_CASE("catalog: resolve_closure takes a closure key as itself, any other string as a name") {
  TestCache c = open_cache();
  Populated p = populate(*c.store);
  auto host = resolve_closure(*c.store, "alpha", "");
  REQUIRE(host);
  CHECK(*host == p.alpha_closure.key);
  auto gpu = resolve_closure(*c.store, "alpha", "sm_90");
  REQUIRE(gpu);
  CHECK(*gpu == p.gpu_closure.key);
  auto by_key = resolve_closure(*c.store, p.gamma_closure.key.hex(), "");
  REQUIRE(by_key);
  CHECK(*by_key == p.gamma_closure.key);

  auto missing = resolve_closure(*c.store, "gamma", "sm_90");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  CHECK(contains(missing.error().message, "'gamma'"));
  CHECK(contains(missing.error().message, "for target sm_90"));
  auto unnamed = resolve_closure(*c.store, "zeta", "");
  REQUIRE_FALSE(unnamed);
  CHECK(unnamed.error().code == Code::not_found);
  CHECK_FALSE(contains(unnamed.error().message, "for target"));
}

TEST_CASE("catalog: a name row of key form answers neither show, graph nor resolve_closure") {
  TestCache c = open_cache();
  Populated p = populate(*c.store);
  // Planted behind the store's back: gamma's closure key, and a key of no
  // closure, as names of alpha's closure.
  std::string gamma = p.gamma_closure.key.hex();
  std::string stray = hash128("no closure").hex();
  for (const std::string& name : {gamma, stray})
    raw_exec(c.path(), "INSERT INTO names(name, target, closure_key, updated_at) VALUES ('" +
                           name + "', 'host', x'" + p.alpha_closure.key.hex() + "', 0)");
  auto shown = find_entry(*c.store, gamma, "");
  REQUIRE(shown);
  REQUIRE(std::holds_alternative<RootDetail>(*shown));
  CHECK(std::get<RootDetail>(*shown).name.empty());
  CHECK(std::get<RootDetail>(*shown).closure.key == p.gamma_closure.key);
  auto resolved = resolve_closure(*c.store, gamma, "host");
  REQUIRE(resolved);
  CHECK(*resolved == p.gamma_closure.key);
  auto graph = closure_graph(*c.store, gamma, "");
  REQUIRE(graph);
  CHECK(graph->closure.key == p.gamma_closure.key);
  CHECK(graph->closure.members.size() == 1);

  auto not_shown = find_entry(*c.store, stray, "");
  REQUIRE_FALSE(not_shown);
  CHECK(not_shown.error().code == Code::not_found);
  auto no_graph = closure_graph(*c.store, stray, "");
  REQUIRE_FALSE(no_graph);
  CHECK(no_graph.error().code == Code::not_found);
}

TEST_CASE("catalog: closure_graph gives a root's members and deferred edges") {
  TestCache c = open_cache();
  Populated p = populate(*c.store);
  auto g = closure_graph(*c.store, "alpha", "host");
  REQUIRE(g);
  CHECK(g->closure.key == p.alpha_closure.key);
  CHECK(g->closure.members.size() == 2);
  REQUIRE(g->edges.size() == 1);
  CHECK(g->edges[0].from == p.alpha.key);
  CHECK(g->edges[0].to == p.beta.key);
  CHECK(g->edges[0].symbol == p.beta.symbol);

  auto single = closure_graph(*c.store, p.gamma_closure.key.hex(), "");
  REQUIRE(single);
  CHECK(single->closure.members.size() == 1);
  CHECK(single->edges.empty());

  auto missing = closure_graph(*c.store, "zeta", "");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  // A well-formed key of no closure: the closure read says not_found.
  auto unknown = closure_graph(*c.store, hash128("no closure").hex(), "");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == Code::not_found);
}

TEST_CASE("catalog: closure_graph of a real precompile follows its deferred chain") {
  TestCache c = open_cache();
  precompile(data_request("nested.ll", {"nest_a"}, {}, /*link_images=*/false), c.path());

  auto g = closure_graph(*c.store, "nest_a", "host");
  INFO((g ? std::string() : g.error().message));
  REQUIRE(g);
  CHECK(g->closure.members.size() == 3);
  std::set<std::string> edges;
  for (const ClosureGraph::Edge& e : g->edges) {
    auto from = c.store->jobs().get_job(e.from);
    auto to = c.store->jobs().get_job(e.to);
    REQUIRE(from);
    REQUIRE(to);
    CHECK(e.symbol == to->symbol);
    edges.insert(from->entry + "->" + to->entry);
  }
  CHECK(edges == std::set<std::string>{"nest_a->nest_b", "nest_b->nest_c"});
  CHECK(g->edges.size() == 2);

  // The host object, by the name a user types.
  std::string root = g->closure.root_job.hex();
  auto obj = dump_artifact(*c.store, root, "object");
  REQUIRE(obj);
  CHECK(obj->compare(0, 4, "\x7f" "ELF") == 0);
  auto ptx = dump_artifact(*c.store, root, "ptx");
  REQUIRE_FALSE(ptx);
  CHECK(ptx.error().code == Code::not_found);
}

TEST_CASE("catalog: dump_artifact by format name: ptx, bitcode, object (obj or cubin)") {
  TestCache c = open_cache();
  Populated p = populate(*c.store);
  JobRecord amd = consistent_job("alpha", "gfx942");
  REQUIRE(c.store->jobs().put_job(amd, {{"bc", "BC bitcode of alpha"}}, {}));

  auto obj = dump_artifact(*c.store, p.alpha.key.hex(), "object");
  REQUIRE(obj);
  CHECK(*obj == "object of alpha, longer");
  auto cubin = dump_artifact(*c.store, p.alpha_gpu.key.hex(), "object");
  REQUIRE(cubin);
  CHECK(*cubin == "cubin of alpha");
  auto ptx = dump_artifact(*c.store, p.alpha_gpu.key.hex(), "ptx");
  REQUIRE(ptx);
  CHECK(*ptx == "// ptx of alpha");
  auto bc = dump_artifact(*c.store, amd.key.hex(), "bitcode");
  REQUIRE(bc);
  CHECK(*bc == "BC bitcode of alpha");

  auto absent = dump_artifact(*c.store, p.alpha.key.hex(), "bitcode");
  REQUIRE_FALSE(absent);
  CHECK(absent.error().code == Code::not_found);
  CHECK(contains(absent.error().message, p.alpha.key.hex()));
  CHECK(contains(absent.error().message, "(host)"));
  CHECK(contains(absent.error().message, "no bitcode artifact"));

  auto unknown_format = dump_artifact(*c.store, p.alpha.key.hex(), "cubin");
  REQUIRE_FALSE(unknown_format);
  CHECK(unknown_format.error().code == Code::invalid_argument);
  CHECK(contains(unknown_format.error().message, "'cubin'"));

  auto no_job = dump_artifact(*c.store, hash128("no such job").hex(), "object");
  REQUIRE_FALSE(no_job);
  CHECK(no_job.error().code == Code::not_found);
  auto bad_key = dump_artifact(*c.store, "not-a-key", "object");
  REQUIRE_FALSE(bad_key);
  CHECK(bad_key.error().code == Code::invalid_argument);
}

TEST_CASE("catalog: explain_keys names the components two stored jobs differ in") {
  TestCache c = open_cache();
  JobRecord a = consistent_job("alpha", "host", "-O2");
  JobRecord b = consistent_job("alpha", "host", "-O3 -g");
  REQUIRE(c.store->jobs().put_job(a, {{"obj", "a"}}, {}));
  REQUIRE(c.store->jobs().put_job(b, {{"obj", "b"}}, {}));

  auto diff = explain_keys(*c.store, a.key, b.key);
  REQUIRE(diff);
  REQUIRE(diff->size() == 2);
  CHECK((*diff)[0].component == "opt_level");
  CHECK((*diff)[0].a == "2");
  CHECK((*diff)[0].b == "3");
  CHECK((*diff)[1].component == "debug");
  CHECK((*diff)[1].a == "false");
  CHECK((*diff)[1].b == "true");

  auto same = explain_keys(*c.store, a.key, a.key);
  REQUIRE(same);
  CHECK(same->empty());

  auto missing = explain_keys(*c.store, a.key, hash128("not stored"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
}
