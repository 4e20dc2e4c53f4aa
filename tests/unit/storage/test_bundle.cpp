// Unit tests for the bundle format (src/storage/bundle.cpp): a round trip,
// and damaged, truncated or newer bundles refused before anything trusts them.
#include "storage/bundle.h"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::storage;

namespace {

BundleData sample() {
  BundleData b;
  BundleData::Job j;
  j.record.key = hash128("job");
  j.record.entry = "f";
  j.record.symbol = "__kiln_deferred_0123";
  j.record.target = "host";
  j.record.options = "-O2";
  j.record.module_hash = hash128("module");
  j.artifacts.push_back({"obj", std::string(1000, 'x')});
  j.refs.push_back({"__kiln_deferred_4567", "g"});
  b.jobs.push_back(j);
  core::ClosureRecord c;
  c.key = hash128("closure");
  c.root_job = j.record.key;
  c.target = "host";
  c.members.push_back({j.record.symbol, j.record.key, "f"});
  b.closures.push_back(c);
  b.images.push_back({{c.key, "x86_64-linux", "lld 22"}, "so", "image"});
  b.names.push_back({"f", "host", c.key});
  return b;
}

} // namespace

TEST_CASE("encode_bundle / decode_bundle round trip every field") {
  BundleData in = sample();
  auto out = decode_bundle(encode_bundle(in));
  REQUIRE(out);
  REQUIRE(out->jobs.size() == 1);
  CHECK(out->jobs[0].record.key == in.jobs[0].record.key);
  CHECK(out->jobs[0].record.entry == "f");
  CHECK(out->jobs[0].artifacts[0].bytes == in.jobs[0].artifacts[0].bytes);
  CHECK(out->jobs[0].refs[0].entry == "g");
  REQUIRE(out->closures.size() == 1);
  CHECK(out->closures[0].members[0].symbol == in.closures[0].members[0].symbol);
  CHECK(out->images[0].key.linker == "lld 22");
  CHECK(out->images[0].bytes == "image");
  CHECK(out->names[0].closure == in.closures[0].key);
  // Deterministic: the same data, the same bytes.
  CHECK(encode_bundle(in) == encode_bundle(sample()));
}

TEST_CASE("a damaged or truncated bundle is corrupt; a newer version is refused") {
  std::string bytes = encode_bundle(sample());
  for (size_t at : {size_t(0), bytes.size() / 2, bytes.size() - 1}) {
    std::string damaged = bytes;
    damaged[at] = char(damaged[at] ^ 0x40);
    auto r = decode_bundle(damaged);
    REQUIRE_FALSE(r);
    CHECK(r.error().code != Code::ok);
  }
  for (size_t n : {size_t(0), size_t(3), bytes.size() - 1}) {
    auto r = decode_bundle(std::string_view(bytes).substr(0, n));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Code::corrupt);
  }
}
