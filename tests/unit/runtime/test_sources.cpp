// Unit tests for the load path's image sources (src/runtime/sources.h) and
// the Backend table's part in it: the sources are tried in one order, and
// the host backend's load leaves its image to load again.
#include "runtime/sources.h"

#include "fixtures/cache.hpp"
#include "runtime/backend.h"

#include <doctest/doctest.h>

#include <string>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::test;

TEST_CASE("a load tries the published images, the warm set, the store, the remote, the link") {
  std::span<const ImageSource> all = image_sources();
  REQUIRE(all.size() == 5);
  const char* order[] = {"published", "warm", "store", "remote", "link"};
  for (size_t i = 0; i < all.size(); ++i) {
    CAPTURE(i);
    CHECK(std::string(all[i].name) == order[i]);
    CHECK(bool(all[i].serve));
  }
}

TEST_CASE("only NVIDIA code may need images the linkers do not make") {
  CHECK(bool(backend_for(core::TargetKind::nvptx).image_maker));
  CHECK_FALSE(bool(backend_for(core::TargetKind::amdgpu).image_maker));
  CHECK_FALSE(bool(backend_for(core::TargetKind::host).image_maker));
}

TEST_CASE("the host backend's load hands back its sealed file, which loads the image again") {
  TestCache c = nested_cache("kiln-sources-kept");
  auto store = open_store(c.path());
  auto closure = store->closures().get_closure(*parse_hash128(c.report.roots[0].closure));
  REQUIRE(closure);
  auto bytes = store->images().get_image_any_linker(closure->key, core::image_arch("host"));
  REQUIRE(bytes);
  const Backend& host = backend_for(core::TargetKind::host);

  // Asked for nothing, it keeps nothing.
  SymbolMap plain;
  auto unkept = host.load(*bytes, *closure, plain, nullptr);
  REQUIRE(unkept);
  REQUIRE(*unkept);
  CHECK(plain.size() == closure->members.size());

  std::shared_ptr<KeptImage> kept;
  SymbolMap first;
  auto mod = host.load(*bytes, *closure, first, &kept);
  REQUIRE(mod);
  REQUIRE(kept);
  CHECK(kept->sealed());
  CHECK(kept->size() == bytes->size());
  mod->reset();
  // Loaded again from the kept file: each member where the first load found
  // it, from the new object's base.
  SymbolMap none;
  std::shared_ptr<const OffsetMap> offsets;
  uintptr_t base = 0;
  auto again = kept->load(*closure, none, &offsets, &base);
  REQUIRE(again);
  REQUIRE(*again);
  CHECK(none.empty());
  REQUIRE(offsets);
  CHECK(offsets->size() == closure->members.size());
  CHECK(base != 0);
}
