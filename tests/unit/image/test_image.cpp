// Unit tests for the image layer (src/image/image.cpp): a closure becomes an
// image once, is served from the cache after that, is made again when the
// stored one is damaged, and a custom maker (the CUDA JIT's shape) takes the
// same path. A lone sm_90 job's image is the ptxas program's whole program,
// without nvJitLink; a closure that links its members is nvJitLink's.
#include "core/check.h"
#include "core/target.h"
#include "fixtures/cache.hpp"
#include "image/image.h"
#include "link/nvjitlink.h"
#include "link/ptxas_program.h"
#include "storage/storage.h"
#include "support/elf.h"
#include "support/fault.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

// A cache holding nested.ll's nest_a closure for the host, without an image.
struct Fixture {
  TempDir dir;
  std::unique_ptr<storage::Storage> storage;
  core::ClosureRecord closure;
};

Fixture compiled() {
  TestCache c = nested_cache("kiln-image-test", /*link_images=*/false);
  c.open();
  auto st = std::make_unique<storage::Storage>(std::move(c.store));
  auto key = st->resolve_name("nest_a", "host");
  REQUIRE(key);
  auto closure = st->get_closure(*key);
  REQUIRE(closure);
  return {std::move(c.dir), std::move(st), closure.take()};
}

} // namespace

TEST_CASE("fetch_or_link links once, stores the image, and serves it from the cache after") {
  Fixture f = compiled();
  CHECK(f.storage->records().images().images_of(f.closure.key)->empty());
  bool linked = false;
  auto first = image::fetch_or_link(*f.storage, f.closure, &linked);
  INFO((first ? std::string() : first.error().message));
  REQUIRE(first);
  CHECK(linked);
  CHECK(core::check_image(*first, f.closure));
  auto stored = f.storage->records().images().images_of(f.closure.key);
  REQUIRE(stored);
  REQUIRE(stored->size() == 1);
  CHECK((*stored)[0].key.arch == core::image_arch("host"));
  CHECK((*stored)[0].format == "so");
  CHECK((*stored)[0].key.linker == *image::linker_fingerprint("host"));

  linked = false;
  auto second = image::fetch_or_link(*f.storage, f.closure, &linked);
  REQUIRE(second);
  CHECK_FALSE(linked);
  CHECK(*second == *first);
}

TEST_CASE("a stored image that fails its checks is linked again, not loaded") {
  Fixture f = compiled();
  auto fp = image::linker_fingerprint("host");
  REQUIRE(fp);
  // Sound checksum, wrong content: what a bad disk or a bad writer leaves.
  REQUIRE(f.storage->records().images().put_image(
      core::image_key(f.closure.key, core::image_arch("host"), *fp), "so", "not an ELF file"));
  bool linked = false;
  auto image = image::fetch_or_link(*f.storage, f.closure, &linked);
  REQUIRE(image);
  CHECK(linked);
  CHECK(core::check_image(*image, f.closure));
}

TEST_CASE("fetch_or_make: another maker, the same store-and-check path") {
  Fixture f = compiled();
  auto real = image::link_closure(f.storage->records(), f.closure);
  REQUIRE(real);
  int made = 0;
  image::Maker maker;
  maker.arch = "test-arch";
  maker.fingerprint = [] { return Result<std::string>(std::string("test maker 1")); };
  maker.make = [&](const core::ClosureRecord&) -> Result<std::string> {
    ++made;
    return *real;
  };
  bool linked = false;
  auto a = image::fetch_or_make(f.storage->records(), f.closure, maker, &linked);
  REQUIRE(a);
  CHECK(linked);
  CHECK(made == 1);
  linked = false;
  auto b = image::fetch_or_make(f.storage->records(), f.closure, maker, &linked);
  REQUIRE(b);
  CHECK_FALSE(linked);
  CHECK(made == 1);

  // What a maker makes is checked before it is stored or returned.
  image::Maker liar = maker;
  liar.arch = "other-arch";
  liar.make = [](const core::ClosureRecord&) -> Result<std::string> {
    return std::string("garbage");
  };
  auto refused = image::fetch_or_make(f.storage->records(), f.closure, liar);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Code::corrupt);
}

namespace {

// `entry` of tests/data/<file> precompiled for sm_90 without its image, and
// its closure.
Fixture compiled_sm90(const std::string& file, const std::string& entry) {
  TestCache c = empty_cache("kiln-image-test");
  c.report = precompile(data_request(file, {entry}, {"sm_90"}, false), c.path());
  c.open();
  auto st = std::make_unique<storage::Storage>(std::move(c.store));
  auto key = st->resolve_name(entry, "sm_90");
  REQUIRE(key);
  auto closure = st->get_closure(*key);
  REQUIRE(closure);
  return {std::move(c.dir), std::move(st), closure.take()};
}

// The linker its one stored image is keyed by.
std::string stored_linker(Fixture& f) {
  auto stored = f.storage->records().images().images_of(f.closure.key);
  REQUIRE(stored);
  REQUIRE(stored->size() == 1);
  CHECK((*stored)[0].key.arch == "sm_90");
  CHECK((*stored)[0].format == "cubin");
  return (*stored)[0].key.linker;
}

bool have_nvidia_tools() {
  if (auto fp = link::nvjitlink_fingerprint(); !fp) {
    MESSAGE("skipped: " << fp.error().message);
    return false;
  }
  if (auto v = link::ptxas_program_version(); !v) {
    MESSAGE("skipped: " << v.error().message);
    return false;
  }
  return true;
}

} // namespace

TEST_CASE("a lone sm_90 job's image is ptxas's whole program, made without nvJitLink; a closure "
          "with deferred references is still linked by nvJitLink") {
  if (!have_nvidia_tools())
    return;
  Fixture lone = compiled_sm90("cuda_vector_add_sm90.ll", "_Z9vectorAddPKfS0_Pfi");
  REQUIRE(lone.closure.members.size() == 1);
  // Where jobs store relocatable cubins (ptxas or its library at each job),
  // every image needs a link: the lone path is for PTX.
  bool ptx_only = !lone.storage->records().jobs().get_artifact(lone.closure.members[0].job, "cubin");
  Fixture linked = compiled_sm90("gpu_nvptx.ll", "k_nested");
  REQUIRE(linked.closure.members.size() == 3);

  // nvJitLink's link fails in this process: the lone image does not go near
  // it, the closure that links three jobs does.
  // A precompile passes its NVIDIA linker (here, this process's nvJitLink):
  // only then may ptxas make the image.
  const image::NvLinker nv_here = [](const std::vector<link::NvInput>& in, const std::string& arch,
                                     bool runtime) { return link::nvjitlink_cubin(in, arch, runtime); };
  // A loading application (no linker given) starts no program: nvJitLink.
  fault::set_plan("link:nvjitlink");
  auto loader_refused = image::fetch_or_link(*lone.storage, lone.closure);
  bool made = false;
  auto image = image::fetch_or_link(*lone.storage, lone.closure, &made, 1, &nv_here);
  auto refused = image::fetch_or_link(*linked.storage, linked.closure, nullptr, 1, &nv_here);
  fault::set_plan("");
  if (!ptx_only) {
    CHECK_FALSE(image);
    MESSAGE("jobs store cubins here: every sm_90 image is nvJitLink's");
    return;
  }
  INFO((image ? std::string() : image.error().message));
  REQUIRE(image);
  CHECK(made);
  CHECK_FALSE(loader_refused);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("link:nvjitlink") != std::string::npos);

  // Keyed by the program that made it, never by nvJitLink's fingerprint.
  std::string linker = stored_linker(lone);
  CHECK(linker == *link::ptxas_program_fingerprint());
  CHECK(linker.rfind(*link::ptxas_program_version() + " whole program", 0) == 0);
  CHECK(linker != *image::linker_fingerprint("sm_90"));

  // An executable cubin for the CUDA machine, with the kernel in it, that
  // the loader's checks accept.
  auto elf = read_elf(*image);
  REQUIRE(elf);
  CHECK(elf->machine == kElfMachineCuda);
  CHECK(elf->type == 2); // ET_EXEC: loadable as it is
  CHECK(defined_symbols(*elf).count("_Z9vectorAddPKfS0_Pfi"));
  CHECK(core::check_image(*image, lone.closure));

  // The same bytes each time, and served from the cache after.
  auto again = image::link_closure_with(lone.storage->records(), lone.closure, 1, &nv_here);
  REQUIRE(again);
  CHECK(*again == *image);
  made = false;
  auto served = image::fetch_or_link(*lone.storage, lone.closure, &made);
  REQUIRE(served);
  CHECK_FALSE(made);
  CHECK(*served == *image);

  // With nvJitLink back, the closure of three jobs is its image.
  auto nv = image::fetch_or_link(*linked.storage, linked.closure);
  INFO((nv ? std::string() : nv.error().message));
  REQUIRE(nv);
  CHECK(stored_linker(linked) == *image::linker_fingerprint("sm_90"));
  auto nv_elf = read_elf(*nv);
  REQUIRE(nv_elf);
  CHECK(nv_elf->machine == kElfMachineCuda);
  CHECK(defined_symbols(*nv_elf).count("k_nested"));
}
