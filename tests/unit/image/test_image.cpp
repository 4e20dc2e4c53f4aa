// Unit tests for the image layer (src/image/image.cpp): a closure becomes an
// image once, is served from the cache after that, is made again when the
// stored one is damaged, and a custom maker (the CUDA JIT's shape) takes the
// same path.
#include "core/check.h"
#include "core/target.h"
#include "fixtures/cache.hpp"
#include "image/image.h"
#include "storage/storage.h"

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
