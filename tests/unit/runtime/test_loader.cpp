// Unit tests for the loader's device dispatch (src/runtime/loader.h): what a
// load without a target picks, and a GPU load on a machine without the GPU;
// and loads from in-memory records (fixtures/memory_records.hpp) that fail
// where a test says.
#include "runtime/loader.h"

#include "core/keys.h"
#include "fixtures/cache.hpp"
#include "fixtures/cpu.hpp"
#include "fixtures/ir.hpp"
#include "fixtures/memory_records.hpp"
#include "request/request.h"
#include "runtime/cuda/cuda_select.h"
#include "runtime/handles.h"
#include "runtime/hip/hip_select.h"

#include <kiln/kiln.h>

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::test;

namespace {

// A cache holding one root, "k", precompiled for `target` (its job and
// closure; no image).
struct OneRoot {
  TestCache file = open_cache("kiln-loader-test");
  kiln_cache cache;
  core::ClosureRecord closure;

  explicit OneRoot(const std::string& target) {
    cache.storage = std::make_unique<storage::Storage>(std::move(file.store));
    storage::Records& local = cache.storage->records();
    core::JobRecord job;
    job.key = hash128("loader-test job " + target);
    job.entry = "k";
    job.symbol = "__kiln_deferred_" + job.key.hex();
    job.target = target;
    job.options = "-O2";
    job.module_hash = hash128("module");
    job.toolchain = "test";
    REQUIRE(local.jobs().put_job(job, {{"ptx", "// no code"}}, {}));
    closure.key = hash128("loader-test closure " + target);
    closure.root_job = job.key;
    closure.target = target;
    closure.members = {{job.symbol, job.key, {}}};
    REQUIRE(local.closures().put_closure(closure, {{"k", target, closure.key}}));
  }
};

bool any_gpu() { return bool(cuda_device()) || bool(hip_device()); }

} // namespace

TEST_CASE("a load names a root") {
  OneRoot one("host");
  auto img = load_image(one.cache, "", "host");
  REQUIRE_FALSE(img);
  CHECK(img.error().code == Code::invalid_argument);
}

TEST_CASE("an NVIDIA load without a device is unavailable, saying CUDA is missing") {
  if (cuda_device()) {
    MESSAGE("skipped: a CUDA device is present; the integration tests cover real loads");
    return;
  }
  OneRoot one("sm_90");
  auto img = load_image(one.cache, "k", "sm_90");
  REQUIRE_FALSE(img);
  CHECK(img.error().code == Code::unavailable);
  CHECK_MESSAGE(img.error().message.find(cuda_device().error().message) != std::string::npos,
                img.error().message);
  CHECK(img.error().message.find("'k'") != std::string::npos);
}

TEST_CASE("a load without a target picks no GPU build when no GPU is present") {
  if (any_gpu()) {
    MESSAGE("skipped: a GPU is present");
    return;
  }
  for (const char* target : {"sm_90", "gfx942"}) {
    CAPTURE(target);
    OneRoot one(target);
    // The host is the choice, and the cache has no host build of "k".
    auto img = load_image(one.cache, "k", "");
    REQUIRE_FALSE(img);
    CHECK(img.error().code == Code::not_found);
  }
  // Named by its closure's key, a root's own target is the choice: here the
  // CUDA backend's, which has no device.
  OneRoot nv("sm_90");
  auto by_key = load_image(nv.cache, nv.closure.key.hex(), "");
  REQUIRE_FALSE(by_key);
  CHECK(by_key.error().code == Code::unavailable);
}

namespace {

// `root` precompiled here for the host from `file`, then the same source as
// a machine with CPU feature `lacking` would record it (its own jobs and
// closure, the name moved to them), with `changed_child` standing for a
// deferred child whose source differs there. Returns (here, theirs).
std::pair<Hash128, Hash128> built_here_and_elsewhere(TestCache& c, const std::string& file,
                                                     const std::string& root,
                                                     const std::string& lacking,
                                                     size_t want_members,
                                                     bool changed_child = false) {
  CompileReport rep = precompile(data_request(file, {root}, {}, true), c.path());
  REQUIRE(rep.roots.size() == 1);
  auto here = parse_hash128(rep.roots[0].closure);
  REQUIRE(here);
  c.open();
  auto mine = c.store->closures().get_closure(*here);
  REQUIRE(mine);
  REQUIRE(mine->members.size() == want_members);
  core::ClosureRecord theirs;
  theirs.target = "host";
  core::ClosureMap members;
  for (const core::ClosureMember& m : mine->members) {
    auto job = c.store->jobs().get_job(m.job);
    REQUIRE(job);
    auto obj = c.store->jobs().get_artifact(job->key, "obj");
    REQUIRE(obj);
    core::JobRecord other = *job;
    other.cpu = "othercpu";
    other.features += ",+" + lacking;
    if (m.job != mine->root_job && changed_child)
      other.module_hash = hash128("another version of " + job->entry);
    // Its key, as its precompile there gave it (a load recomputes it).
    auto key = core::job_key_of(other);
    REQUIRE(key);
    other.key = *key;
    if (m.job == mine->root_job)
      theirs.root_job = other.key;
    REQUIRE(c.store->jobs().put_job(other, {{"obj", *obj}}, {}));
    theirs.members.push_back({m.symbol, other.key, {}});
    members.emplace_back(m.symbol, other.key);
  }
  theirs.key = core::closure_key(theirs.root_job, members);
  REQUIRE(c.store->closures().put_closure(theirs, {}));
  REQUIRE(c.store->names().point_name({root, "host", theirs.key}, "elsewhere"));
  c.store.reset();
  return {*here, theirs.key};
}

} // namespace

TEST_CASE("loader: a host name another CPU's precompile moved loads this CPU's build of the same "
          "source") {
  // A feature this CPU lacks, for a build made "elsewhere".
  std::string lacking = lacking_cpu_feature();
  if (lacking.empty()) {
    MESSAGE("skipped: this CPU has every feature the table knows");
    return;
  }
  TestCache c = empty_cache("kiln-loader-cpu");
  auto [here, their] = built_here_and_elsewhere(c, "nested.ll", "nest_c", lacking, 1);

  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  kiln_image* img = nullptr;
  kiln_status st = kiln_image_load(cache, "nest_c", "host", &img);
  std::string why = kiln_last_error();
  INFO(why);
  REQUIRE(st == KILN_OK);
  CHECK(img->closure == here); // this CPU's build
  void* f = nullptr;
  REQUIRE(kiln_image_lookup(img, "nest_c", &f) == KILN_OK);
  CHECK(reinterpret_cast<int (*)(int)>(f)(7) == 21);
  kiln_image_release(img);
  // By key, the other build is what was asked for: refused, naming the feature.
  CHECK(kiln_image_load(cache, their.hex().c_str(), "host", &img) == KILN_UNAVAILABLE);
  CHECK(std::string(kiln_last_error()).find("lacks: " + lacking) != std::string::npos);
  kiln_cache_close(cache);

  // Without this CPU's build the name is refused as before.
  raw_exec(c.path(), "DELETE FROM closures WHERE key = x'" + here.hex() + "'");
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  CHECK(kiln_image_load(cache, "nest_c", "host", &img) == KILN_UNAVAILABLE);
  CHECK(std::string(kiln_last_error()).find("lacks: " + lacking) != std::string::npos);
  kiln_cache_close(cache);
}

TEST_CASE("loader: another CPU's build of a parent whose deferred child changed is not this "
          "CPU's build of it") {
  std::string lacking = lacking_cpu_feature();
  if (lacking.empty()) {
    MESSAGE("skipped: this CPU has every feature the table knows");
    return;
  }
  // Here: v1 (chg_child(x) = x + 1). Elsewhere, on a CPU with `lacking`:
  // v2, whose child is another function; the parent's job is the same source.
  TestCache c = empty_cache("kiln-loader-cpu");
  built_here_and_elsewhere(c, "change_v1.ll", "chg_parent", lacking, 2, true);

  // v1 here is not what the name means now: refused, not run.
  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  kiln_image* img = nullptr;
  CHECK(kiln_image_load(cache, "chg_parent", "host", &img) == KILN_UNAVAILABLE);
  CHECK(std::string(kiln_last_error()).find("lacks: " + lacking) != std::string::npos);
  kiln_cache_close(cache);
}

// --- loads from in-memory records ---------------------------------------------

namespace {

// A handle over in-memory records holding nested.ll's nest_a, precompiled
// by the driver (its image linked and stored).
struct MemoryCache {
  kiln_cache cache;
  MemoryRecords* mem = nullptr;
  MemoryCache() {
    auto owned = std::make_unique<MemoryRecords>();
    mem = owned.get();
    cache.storage = std::make_unique<storage::Storage>(std::move(owned));
    CompileRequest req;
    req.inputs = {SourceInput::memory("nested.ll", data_file("nested.ll"))};
    req.entries = {"nest_a"};
    auto plan = Plan::create(req);
    REQUIRE(plan);
    auto rep = request::run(*plan, cache.storage->records());
    INFO((rep ? std::string() : rep.error().message));
    REQUIRE(rep);
    REQUIRE(rep->ok());
  }
  // Loads nest_a for the host, calls it with `arg` and releases it.
  int call(int arg) {
    kiln_image* img = nullptr;
    INFO(kiln_last_error());
    REQUIRE(kiln_image_load(&cache, "nest_a", "host", &img) == KILN_OK);
    void* fn = nullptr;
    REQUIRE(kiln_image_lookup(img, "nest_a", &fn) == KILN_OK);
    int r = reinterpret_cast<int (*)(int)>(fn)(arg);
    kiln_image_release(img);
    return r;
  }
};

} // namespace

TEST_CASE("loader over in-memory records: a root loads from its stored image and runs") {
  MemoryCache m;
  int links = m.mem->calls("put_image");
  CHECK(m.call(1) == 333);
  CHECK(m.mem->calls("read_root") == 1);
  CHECK(m.mem->calls("put_image") == links); // the stored image served: nothing linked
  // Loaded again with nothing committed: the handle's warm image, no read.
  CHECK(m.call(1) == 333);
  CHECK(m.cache.warm.hits() == 1);
  CHECK(m.mem->calls("read_root") == 1);
  // Another connection's commit: the records are read again.
  m.mem->bump_version();
  CHECK(m.call(1) == 333);
  CHECK(m.cache.warm.hits() == 1);
  CHECK(m.mem->calls("read_root") == 2);
}

TEST_CASE("loader over in-memory records: a read that fails is the load's error, naming it") {
  MemoryCache m;
  m.mem->fail("read_root", make_error(Code::unavailable, "the records cannot be read (injected)"));
  kiln_image* img = nullptr;
  CHECK(kiln_image_load(&m.cache, "nest_a", "host", &img) != KILN_OK);
  CHECK(img == nullptr);
  CHECK(std::string(kiln_last_error()).find("the records cannot be read (injected)") !=
        std::string::npos);
  m.mem->heal();
  CHECK(m.call(2) > 0);
}

TEST_CASE("loader over in-memory records: a stored image that is not the closure's is "
          "refused and the closure linked again") {
  MemoryCache m;
  auto key = m.mem->names().resolve_name("nest_a", "host");
  REQUIRE(key);
  auto closure = m.mem->closures().get_closure(*key);
  REQUIRE(closure);
  auto good = m.mem->images().get_image_any_linker(*key, core::image_arch(closure->target));
  REQUIRE(good);
  // A newer image under another linker's name: a loader takes the newest,
  // and must check it against the closure before it runs.
  core::ImageKey bad{*key, core::image_arch(closure->target), "zz-other-linker"};
  REQUIRE(m.mem->images().put_image(bad, "so",
                                    "\x7f"
                                    "ELF not really an image"));
  int links = m.mem->calls("put_image");
  CHECK(m.call(1) == 333);
  CHECK(m.mem->calls("put_image") == links + 1); // relinked and stored
}
