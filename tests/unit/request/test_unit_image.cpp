// Unit images: a request's roots for one GPU target are linked as one image
// (a library closure named by its key), not one image per root, and each
// root's load finds that image (Store::read_best_image). A root that fails is
// left out; --library, --no-link, the host and memo replays keep their rules;
// the same unit gives the same union in every cache and at any -j.
#include "codegen/ptxas.h"
#include "core/check.h"
#include "fixtures/cache.hpp"
#include "image/image.h"
#include "link/nvjitlink.h"
#include "storage/storage.h"
#include "support/elf.h"

#include <kiln/compiler.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::string> kGpuRoots = {"k_nested", "k_fact", "k_cycle"};

bool can_link_sm90() {
  if (auto fp = link::nvjitlink_fingerprint(); !fp) {
    MESSAGE("skipped: " << fp.error().message);
    return false;
  }
  return true;
}

std::string fixture_for(const std::string& target) {
  return target.rfind("sm_", 0) == 0 ? "gpu_nvptx.ll" : "gpu_amdgpu.ll";
}

// The libraries of unit images in the cache (named "kiln-unit-<closure key>").
std::vector<core::LibraryRecord> unit_images(storage::Store& store) {
  auto libs = store.images().list_libraries();
  INFO((libs ? std::string() : libs.error().message));
  REQUIRE(libs);
  std::vector<core::LibraryRecord> out;
  for (const core::LibraryRecord& l : *libs)
    if (l.name.rfind("kiln-unit-", 0) == 0) {
      CHECK(l.name == "kiln-unit-" + l.closure.hex());
      out.push_back(l);
    }
  return out;
}

// Each root of the report loads its image from the cache without a link:
// the image defines every kernel of `kernels`, and is checked against the
// root's closure.
void each_root_finds(TestCache& c, const std::string& target,
                     const std::vector<std::string>& kernels) {
  storage::Storage storage(*c.store);
  for (const RootReport& r : c.report.roots) {
    if (!r.error.empty())
      continue;
    CAPTURE(r.name);
    auto key = c.store->names().resolve_name(r.name, target);
    REQUIRE(key);
    auto closure = c.store->closures().get_closure(*key);
    REQUIRE(closure);
    CHECK(c.store->images().get_image_any_linker(*key, target)); // found, not linked
    bool linked = false;
    auto image = image::fetch_or_link(storage, *closure, &linked);
    INFO((image ? std::string() : image.error().message));
    REQUIRE(image);
    CHECK_FALSE(linked);
    CHECK(core::check_image(*image, *closure));
    auto elf = read_elf(*image);
    REQUIRE(elf);
    std::set<std::string> defined;
    for (const ElfSymbol& s : elf->symbols)
      if (s.defined && s.function)
        defined.insert(s.name);
    for (const std::string& k : kernels)
      CHECK_MESSAGE(defined.count(k), k << " missing from " << r.name << "'s image");
  }
}

} // namespace

TEST_SUITE("unit.driver.unit_image") {

TEST_CASE("a three-kernel sm_90 or gfx942 unit links one image, and each root's load finds it") {
  for (const std::string target : {"sm_90", "gfx942"}) {
    CAPTURE(target);
    if (target == "sm_90" && !can_link_sm90())
      continue;
    TestCache c = empty_cache("kiln-unit-image");
    c.report = precompile(data_request(fixture_for(target), {}, {target}), c.path());
    REQUIRE(c.report.roots.size() == 3);
    for (const RootReport& r : c.report.roots)
      CHECK(r.image);
    c.open();
    storage::Stats st = stats_ok(*c.store);
    CHECK(st.images == 1);    // one link, not three
    CHECK(st.closures == 4);  // the three roots' and the union's
    auto units = unit_images(*c.store);
    REQUIRE(units.size() == 1);
    CHECK(units[0].target == target);
    CHECK(units[0].roots == std::vector<std::string>{"k_cycle", "k_fact", "k_nested"});
    each_root_finds(c, target, kGpuRoots);
  }
}

TEST_CASE("a unit image has the same key in every cache and at any -j, and a second run "
          "links nothing") {
  if (!can_link_sm90())
    return;
  std::vector<std::string> names;
  for (unsigned jobs : {1u, 4u}) {
    CAPTURE(jobs);
    TestCache c = empty_cache("kiln-unit-image-j");
    CompileRequest req = data_request("gpu_nvptx.ll", {}, {"sm_90"});
    req.jobs = jobs;
    c.report = precompile(req, c.path());
    // Again into the same cache: the union is found, not linked again.
    precompile(req, c.path());
    c.open();
    CHECK(stats_ok(*c.store).images == 1);
    auto units = unit_images(*c.store);
    REQUIRE(units.size() == 1);
    names.push_back(units[0].name);
  }
  CHECK(names[0] == names[1]);
}

TEST_CASE("a unit image leaves out a root that failed; the others still share one image") {
  if (!can_link_sm90())
    return;
  // The graph kernels with while_body calling what nothing defines.
  std::string ir = graph_ir_with_undefined_call();
  TestCache c = empty_cache("kiln-unit-image-partial");
  CompileRequest req;
  req.inputs = {SourceInput::memory("typo.ll", ir)};
  req.targets = {"sm_90"};
  req.remote = "off";
  req.jobs = 2;
  auto plan = Plan::create(req);
  REQUIRE(plan);
  auto report = plan->run(c.path());
  REQUIRE(report);
  CHECK_FALSE(report->ok());
  c.report = report.take();
  std::vector<std::string> good;
  for (const RootReport& r : c.report.roots)
    if (r.error.empty()) {
      CHECK(r.image);
      good.push_back(r.name);
    }
  REQUIRE(good.size() == 2);
  c.open();
  CHECK(stats_ok(*c.store).images == 1);
  auto units = unit_images(*c.store);
  REQUIRE(units.size() == 1);
  std::sort(good.begin(), good.end());
  CHECK(units[0].roots == good);
  each_root_finds(c, "sm_90", good);
}

TEST_CASE("no unit image with --no-link or with --library") {
  if (can_link_sm90()) {
    TestCache c = empty_cache("kiln-unit-image-nolink");
    c.report = precompile(data_request("gpu_nvptx.ll", {}, {"sm_90"}, false), c.path());
    c.open();
    CHECK(stats_ok(*c.store).images == 0);
    CHECK(unit_images(*c.store).empty());
  }
  // --library links the library's image alone, as before.
  TestCache c = empty_cache("kiln-unit-image-library");
  CompileRequest req = data_request("gpu_amdgpu.ll", {}, {"gfx942"});
  req.library = "mine";
  c.report = precompile(req, c.path());
  c.open();
  CHECK(stats_ok(*c.store).images == 1);
  CHECK(unit_images(*c.store).empty());
  CHECK(c.store->images().get_library("mine", "gfx942"));
  // A library may not take a unit image's name.
  req.library = "kiln-unit-" + std::string(32, 'a');
  auto refused = Plan::create(req);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Code::invalid_argument);
}

TEST_CASE("host roots keep a shared object each, and each loads and runs") {
  TestCache c = empty_cache("kiln-unit-image-host");
  c.report = precompile(data_request("diamond.ll", {}), c.path());
  c.open();
  CHECK(unit_images(*c.store).empty());
  CHECK(stats_ok(*c.store).images == int64_t(c.report.roots.size()));
}

TEST_CASE("a memo replay of a unit answers every root from the unit image") {
  if (!can_link_sm90())
    return;
  TestCache c = empty_cache("kiln-unit-image-memo");
  CompileRequest req = data_request("gpu_nvptx.ll", {}, {"sm_90"});
  for (int run = 0; run < 2; ++run) {
    CAPTURE(run);
    auto report = compile(req, c.path());
    INFO((report ? std::string() : report.error().message));
    REQUIRE(report);
    CHECK(report->ok());
    REQUIRE(report->roots.size() == 3);
    for (const RootReport& r : report->roots)
      CHECK(r.image);
    if (run == 1)
      for (const JobReport& j : report->jobs)
        CHECK(j.status == JobStatus::cached);
  }
  c.open();
  CHECK(stats_ok(*c.store).images == 1);
  CHECK(unit_images(*c.store).size() == 1);
}

} // TEST_SUITE
