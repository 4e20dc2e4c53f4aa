// Unit tests for writing a root's image to a file (src/image/export.cpp): a
// closure with only its jobs' artifacts is linked and stored first, a stored
// image is written as it is, a root is named by name and target or by closure
// key, and what names nothing writes nothing.
#include "image/export.h"

#include "core/check.h"
#include "core/target.h"
#include "fixtures/cache.hpp"
#include "image/image.h"
#include "storage/storage.h"

#include <doctest/doctest.h>

#include <string>

using namespace kiln;
using namespace kiln::test;

namespace {

// A cache holding nested.ll's nest_a for the host: its jobs and closure, no image.
TestCache compiled() {
  TestCache f = nested_cache("kiln-export-test", /*link_images=*/false);
  f.open();
  return f;
}

} // namespace

TEST_CASE("export_image links a closure that has no image, stores it, and writes it") {
  TestCache f = compiled();
  auto key = f.store->names().resolve_name("nest_a", "host");
  REQUIRE(key);
  auto before = f.store->images().images_of(*key);
  REQUIRE(before);
  REQUIRE(before->empty());

  std::string file = f.dir.path() + "/out/nest_a.so";
  REQUIRE(make_dirs(f.dir.path() + "/out"));
  auto out = image::export_image(*f.store, "nest_a", "host", file);
  INFO((out ? std::string() : out.error().message));
  REQUIRE(out);
  CHECK(out->closure.key == *key);
  CHECK(out->closure.members.size() == 3);
  auto bytes = read_file(file);
  REQUIRE(bytes);
  CHECK(out->bytes == bytes->size());
  // A loadable image of this closure: an ELF of this machine defining every member.
  CHECK(core::check_image(*bytes, out->closure));

  // Stored for next time, the same bytes as written.
  auto stored = f.store->images().images_of(*key);
  REQUIRE(stored);
  REQUIRE(stored->size() == 1);
  CHECK((*stored)[0].key.arch == core::image_arch("host"));
  CHECK((*stored)[0].bytes == *bytes);
}

TEST_CASE("export_image writes the stored image as it is, by name or by closure key") {
  TestCache f = compiled();
  auto key = f.store->names().resolve_name("nest_a", "host");
  REQUIRE(key);
  auto closure = f.store->closures().get_closure(*key);
  REQUIRE(closure);
  storage::Storage storage(*f.store);
  auto linked = image::fetch_or_link(storage, *closure);
  REQUIRE(linked);

  std::string by_name = f.dir.path() + "/by-name.so", by_key = f.dir.path() + "/by-key.so";
  auto a = image::export_image(*f.store, "nest_a", "host", by_name);
  REQUIRE(a);
  auto b = image::export_image(*f.store, key->hex(), "", by_key);
  REQUIRE(b);
  CHECK(b->closure.key == *key);
  CHECK(*read_file(by_name) == *linked);
  CHECK(*read_file(by_key) == *linked);
  CHECK(a->bytes == linked->size());
  // Nothing was linked a second time.
  auto stored = f.store->images().images_of(*key);
  REQUIRE(stored);
  CHECK(stored->size() == 1);

  // An existing file is replaced whole.
  REQUIRE(write_file_atomic(by_name, std::string(1 << 20, 'x')));
  REQUIRE(image::export_image(*f.store, "nest_a", "host", by_name));
  CHECK(*read_file(by_name) == *linked);
}

TEST_CASE("export_image of a root that is not there writes nothing") {
  TestCache f = compiled();
  std::string file = f.dir.path() + "/missing.so";

  auto unknown = image::export_image(*f.store, "nest_z", "host", file);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == Code::not_found);
  // A root precompiled for the host only, asked for another target.
  auto other_target = image::export_image(*f.store, "nest_a", "sm_90", file);
  REQUIRE_FALSE(other_target);
  CHECK(other_target.error().code == Code::not_found);
  // A well-formed key of no closure.
  auto no_closure = image::export_image(*f.store, hash128("no closure").hex(), "host", file);
  REQUIRE_FALSE(no_closure);
  CHECK(no_closure.error().code == Code::not_found);
  CHECK_FALSE(path_exists(file));

  // A directory that does not exist: the image is made, the write fails, no file.
  auto unwritable = image::export_image(*f.store, "nest_a", "host",
                                        f.dir.path() + "/no/such/dir/out.so");
  REQUIRE_FALSE(unwritable);
  CHECK_FALSE(path_exists(f.dir.path() + "/no/such/dir/out.so"));
}
