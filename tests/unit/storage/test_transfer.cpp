// Unit tests for moving roots between caches (src/storage/transfer.cpp):
// a real precompile exported and imported into a second cache arrives whole
// and verifies; import is idempotent; export by closure key and of nothing
// that exists; and a bundle damaged on disk or consistent on the wire but
// forged in content is refused before anything is written.
#include "storage/transfer.h"

#include "fixtures/cache.hpp"
#include "storage/bundle.h"
#include "storage/verify.h"

#include <doctest/doctest.h>

#include <string>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

// nested.ll's nest_a (three jobs) precompiled for the host, with its image.
TestCache compiled_source() {
  TestCache c = nested_cache("kiln-transfer-source");
  c.open();
  return c;
}

void check_empty(Store& store) {
  Stats st = stats_ok(store);
  CHECK(st.jobs == 0);
  CHECK(st.closures == 0);
  CHECK(st.images == 0);
  CHECK(st.names == 0);
}

} // namespace

TEST_CASE("transfer: export then import into a second cache moves the root whole") {
  TestCache src = compiled_source();
  TestCache dst = open_cache();
  std::string file = dst.dir.path() + "/nest.kiln";

  auto out = export_bundle(*src.store, file, {});
  INFO((out ? std::string() : out.error().message));
  REQUIRE(out);
  CHECK(out->closures == 1);
  CHECK(out->jobs == 3);
  CHECK(out->images == 1);
  CHECK(out->names == 1);
  auto bytes = read_file(file);
  REQUIRE(bytes);
  CHECK(out->bytes == bytes->size());

  auto in = import_bundle(*dst.store, file);
  INFO((in ? std::string() : in.error().message));
  REQUIRE(in);
  CHECK(in->closures == 1);
  CHECK(in->jobs == 3);
  CHECK(in->images == 1);
  CHECK(in->names == 1);
  CHECK(in->bytes == 0);

  // The same name, closure, jobs, artifacts and image as the source.
  auto src_key = src.store->names().resolve_name("nest_a", "host");
  auto dst_key = dst.store->names().resolve_name("nest_a", "host");
  REQUIRE(src_key);
  REQUIRE(dst_key);
  CHECK(*dst_key == *src_key);
  auto closure = src.store->closures().get_closure(*src_key);
  REQUIRE(closure);
  auto copied = dst.store->closures().get_closure(*dst_key);
  REQUIRE(copied);
  CHECK(copied->root_job == closure->root_job);
  REQUIRE(copied->members.size() == 3);
  for (const ClosureMember& m : closure->members) {
    CAPTURE(m.entry);
    auto a = src.store->jobs().get_artifact(m.job, "obj");
    auto b = dst.store->jobs().get_artifact(m.job, "obj");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(*a == *b);
    auto ja = src.store->jobs().get_job(m.job);
    auto jb = dst.store->jobs().get_job(m.job);
    REQUIRE(jb);
    CHECK(jb->entry == ja->entry);
    CHECK(jb->symbol == ja->symbol);
    CHECK(jb->options == ja->options);
  }
  auto src_images = src.store->images().images_of(*src_key);
  auto dst_images = dst.store->images().images_of(*dst_key);
  REQUIRE(src_images);
  REQUIRE(dst_images);
  REQUIRE(dst_images->size() == 1);
  CHECK((*dst_images)[0].bytes == (*src_images)[0].bytes);
  CHECK((*dst_images)[0].key.linker == (*src_images)[0].key.linker);

  auto rep = verify_cache(*dst.store);
  REQUIRE(rep);
  CHECK(rep->ok());
  CHECK(rep->jobs == 3);
  CHECK(rep->closures == 1);

  // Importing again keeps what is there and adds nothing.
  Stats before = stats_ok(*dst.store);
  auto again = import_bundle(*dst.store, file);
  REQUIRE(again);
  Stats after = stats_ok(*dst.store);
  CHECK(after.jobs == before.jobs);
  CHECK(after.closures == before.closures);
  CHECK(after.images == before.images);
  CHECK(after.names == before.names);
}

TEST_CASE("transfer: export by name or by closure key; a name that names nothing is refused") {
  TestCache src = compiled_source();
  auto key = src.store->names().resolve_name("nest_a", "host");
  REQUIRE(key);
  TempDir dir = temp_dir("kiln-transfer-files");

  std::string by_name = dir.path() + "/by-name.kiln", by_key = dir.path() + "/by-key.kiln";
  auto named = export_bundle(*src.store, by_name, {"nest_a"});
  REQUIRE(named);
  auto keyed = export_bundle(*src.store, by_key, {key->hex()});
  REQUIRE(keyed);
  // The same closure either way, with the names that point at it.
  CHECK(keyed->closures == 1);
  CHECK(keyed->jobs == 3);
  CHECK(keyed->names == 1);
  CHECK(*read_file(by_name) == *read_file(by_key));
  // Naming it twice exports it once.
  auto twice = export_bundle(*src.store, by_name, {"nest_a", key->hex()});
  REQUIRE(twice);
  CHECK(twice->closures == 1);

  std::string nothing = dir.path() + "/nothing.kiln";
  auto missing = export_bundle(*src.store, nothing, {"nest_z"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  CHECK(missing.error().message.find("'nest_z'") != std::string::npos);
  CHECK_FALSE(path_exists(nothing));

  // An empty cache exports an empty bundle, which imports as nothing.
  TestCache empty = open_cache();
  std::string none = dir.path() + "/none.kiln";
  auto out = export_bundle(*empty.store, none, {});
  REQUIRE(out);
  CHECK(out->closures == 0);
  CHECK(out->jobs == 0);
  TestCache dst = open_cache();
  auto in = import_bundle(*dst.store, none);
  REQUIRE(in);
  CHECK(in->closures == 0);
  check_empty(*dst.store);
}

TEST_CASE("transfer: a bundle damaged on disk is refused and the target cache is unchanged") {
  TestCache src = compiled_source();
  TestCache dst = open_cache();
  std::string file = dst.dir.path() + "/nest.kiln";
  REQUIRE(export_bundle(*src.store, file, {}));
  auto bytes = read_file(file);
  REQUIRE(bytes);

  std::string flipped = *bytes;
  flipped[flipped.size() / 2] ^= 0x20;
  REQUIRE(write_file_atomic(file, flipped));
  auto refused = import_bundle(*dst.store, file);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Code::corrupt);
  CHECK(refused.error().message.find(file) != std::string::npos);
  check_empty(*dst.store);

  REQUIRE(write_file_atomic(file, bytes->substr(0, bytes->size() - 100)));
  auto truncated = import_bundle(*dst.store, file);
  REQUIRE_FALSE(truncated);
  CHECK(truncated.error().code == Code::corrupt);
  check_empty(*dst.store);

  auto missing = import_bundle(*dst.store, dst.dir.path() + "/absent.kiln");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
}

TEST_CASE("transfer: a well-formed bundle with forged content writes nothing, not even its "
          "sound jobs") {
  TestCache src = compiled_source();
  TestCache dst = open_cache();
  std::string file = dst.dir.path() + "/forged.kiln";
  REQUIRE(export_bundle(*src.store, file, {}));
  auto bytes = read_file(file);
  REQUIRE(bytes);
  auto data = decode_bundle(*bytes);
  REQUIRE(data);
  REQUIRE(data->closures.size() == 1);
  REQUIRE(data->jobs.size() == 3);

  // Every job is sound; the closure drops a member but keeps its key.
  BundleData dropped = *data;
  dropped.closures[0].members.pop_back();
  // A job's code swapped for another's: its key no longer says what it is.
  BundleData swapped = *data;
  swapped.jobs[0].record.entry = "something_else";
  // An image that is not what its closure's members link to.
  BundleData bad_image = *data;
  REQUIRE(bad_image.images.size() == 1);
  bad_image.images[0].bytes = "not an ELF";

  int i = 0;
  for (const BundleData* forged : {&dropped, &swapped, &bad_image}) {
    CAPTURE(i++);
    REQUIRE(write_file_atomic(file, encode_bundle(*forged)));
    auto refused = import_bundle(*dst.store, file);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Code::corrupt);
    CHECK(refused.error().message.find("bundle") != std::string::npos);
    check_empty(*dst.store);
  }

  // The untouched bundle, re-encoded, still imports: the forgeries were refused
  // for their content.
  REQUIRE(write_file_atomic(file, encode_bundle(*data)));
  REQUIRE(import_bundle(*dst.store, file));
  CHECK(stats_ok(*dst.store).closures == 1);
}

TEST_CASE("transfer: a bundle naming a root like a closure key is refused; export never carries "
          "such a name") {
  TestCache src = compiled_source();
  auto key = src.store->names().resolve_name("nest_a", "host");
  REQUIRE(key);
  TestCache dst = open_cache();
  std::string file = dst.dir.path() + "/shadow.kiln";
  REQUIRE(export_bundle(*src.store, file, {}));
  auto data = decode_bundle(*read_file(file));
  REQUIRE(data);
  REQUIRE(data->names.size() == 1);

  // The bundle's own closure under a name spelling another closure's key:
  // imported, a load of that key would get this code.
  BundleData shadow = *data;
  std::string victim = hash128("another root's closure").hex();
  shadow.names[0].name = victim;
  REQUIRE(write_file_atomic(file, encode_bundle(shadow)));
  auto refused = import_bundle(*dst.store, file);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Code::corrupt);
  CHECK_MESSAGE(
      refused.error().message.find("name '" + victim + "' has the form of a closure key") !=
          std::string::npos,
      refused.error().message);
  check_empty(*dst.store);
  // Past the check, the store refuses it too, and writes nothing.
  Status put = dst.store->upkeep().put_bundle(shadow);
  REQUIRE_FALSE(put);
  CHECK(put.error().code == Code::invalid_argument);
  check_empty(*dst.store);

  // A name row of key form an older cache holds is left out of its bundles,
  // which import cleanly.
  raw_exec(src.path(), "INSERT INTO names(name, target, closure_key, updated_at) VALUES ('" +
                           victim + "', 'host', x'" + key->hex() + "', 0)");
  auto out = export_bundle(*src.store, file, {});
  REQUIRE(out);
  CHECK(out->names == 1);
  REQUIRE(import_bundle(*dst.store, file));
  auto names = dst.store->names().list_names();
  REQUIRE(names);
  REQUIRE(names->size() == 1);
  CHECK((*names)[0].name == "nest_a");
}
