// Unit tests for "why did it miss?" (src/core/explain.cpp): a job's key
// components by name in a fixed order, options shown parsed when canonical
// and as stored when not, and the components in which two jobs differ.
#include "core/explain.h"

#include "support/hash.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::core;

namespace {

JobRecord job(const std::string& options = "-O2") {
  JobRecord j;
  j.key = hash128("explain job");
  j.entry = "saxpy";
  j.symbol = "__kiln_deferred_00000000000000000000000000000000";
  j.target = "sm_90";
  j.triple = "nvptx64-nvidia-cuda";
  j.cpu = "sm_90";
  j.features = "+ptx84";
  j.options = options;
  j.module_hash = hash128("module of saxpy");
  j.toolchain = "kiln-artifacts 1; llvm 22";
  return j;
}

std::vector<std::string> names_of(const std::vector<NamedComponent>& cs) {
  std::vector<std::string> out;
  for (const NamedComponent& c : cs)
    out.push_back(c.name);
  return out;
}

std::vector<std::string> differing(const std::vector<KeyDifference>& ds) {
  std::vector<std::string> out;
  for (const KeyDifference& d : ds)
    out.push_back(d.component);
  return out;
}

} // namespace

TEST_CASE("explain: named_components lists every key component in its fixed order") {
  JobRecord j = job("-O3 -g");
  auto cs = named_components(j);
  CHECK(names_of(cs) == std::vector<std::string>{"module_hash", "entry", "target", "triple", "cpu",
                                                 "features", "opt_level", "debug", "toolchain"});
  REQUIRE(cs.size() == 9);
  CHECK(cs[0].value == j.module_hash.hex());
  CHECK(cs[1].value == "saxpy");
  CHECK(cs[2].value == "sm_90");
  CHECK(cs[3].value == "nvptx64-nvidia-cuda");
  CHECK(cs[4].value == "sm_90");
  CHECK(cs[5].value == "+ptx84");
  CHECK(cs[6].value == "3");
  CHECK(cs[7].value == "true");
  CHECK(cs[8].value == "kiln-artifacts 1; llvm 22");

  auto plain = named_components(job("-O0"));
  CHECK(plain[6].value == "0");
  CHECK(plain[7].value == "false");
}

TEST_CASE("explain: options that are not canonical are shown as stored in opt_level and debug") {
  auto cs = named_components(job("-Ofast"));
  REQUIRE(cs.size() == 9);
  CHECK(cs[6].value == "-Ofast");
  CHECK(cs[7].value == "-Ofast");
  // The rest does not depend on the options parsing.
  CHECK(cs[1].value == "saxpy");
  CHECK(cs[0].value == hash128("module of saxpy").hex());
}

TEST_CASE("explain: compare_keys names each differing component with both values, in order") {
  JobRecord a = job("-O2");
  CHECK(compare_keys(a, a).empty());

  // The key, symbol and times are not components: jobs differing only there agree.
  JobRecord same = a;
  same.key = hash128("another key");
  same.symbol = "__kiln_deferred_ffffffffffffffffffffffffffffffff";
  same.created_at = 12345;
  same.compile_ms = 9.5;
  CHECK(compare_keys(a, same).empty());

  JobRecord b = a;
  b.toolchain = "kiln-artifacts 1; llvm 23";
  b.options = "-O2 -g";
  b.module_hash = hash128("module of saxpy, edited");
  auto diff = compare_keys(a, b);
  CHECK(differing(diff) == std::vector<std::string>{"module_hash", "debug", "toolchain"});
  REQUIRE(diff.size() == 3);
  CHECK(diff[0].a == a.module_hash.hex());
  CHECK(diff[0].b == b.module_hash.hex());
  CHECK(diff[1].a == "false");
  CHECK(diff[1].b == "true");
  CHECK(diff[2].a == "kiln-artifacts 1; llvm 22");
  CHECK(diff[2].b == "kiln-artifacts 1; llvm 23");

  // Against options that do not parse, both option components differ.
  auto odd = compare_keys(a, job("-Ofast"));
  CHECK(differing(odd) == std::vector<std::string>{"opt_level", "debug"});
  REQUIRE(odd.size() == 2);
  CHECK(odd[0].a == "2");
  CHECK(odd[0].b == "-Ofast");

  JobRecord c = a;
  c.entry = "daxpy";
  c.target = "sm_80";
  c.cpu = "sm_80";
  CHECK(differing(compare_keys(a, c)) == std::vector<std::string>{"entry", "target", "cpu"});
}

TEST_CASE("explain_miss: the nearest job, and only the features that differ") {
  JobRecord wanted;
  wanted.key = hash128("wanted");
  wanted.entry = "f";
  wanted.target = "host:x86-64-v3";
  wanted.triple = "x86_64-unknown-linux-gnu";
  wanted.cpu = "x86-64-v3";
  wanted.features = "+avx,+avx2,+sse2";
  wanted.options = "-O2";
  wanted.module_hash = hash128("module");
  wanted.toolchain = "t";
  JobRecord near = wanted;
  near.key = hash128("near");
  near.features = "+avx,+avx512f,+sse2";
  JobRecord far = near;
  far.key = hash128("far");
  far.options = "-O3";
  far.module_hash = hash128("other module");
  JobRecord other_entry = wanted;
  other_entry.entry = "g";

  MissExplanation miss = explain_miss(wanted, {far, other_entry, near});
  REQUIRE(miss.nearest);
  CHECK(miss.nearest->key == near.key);
  std::string text = describe_miss(wanted, miss);
  CHECK(text.find("differs in CPU/features") != std::string::npos);
  CHECK(text.find("features wanted only +avx2, cached only +avx512f") != std::string::npos);
  CHECK(text.find("+sse2") == std::string::npos); // shared features are not listed

  MissExplanation none = explain_miss(wanted, {other_entry});
  CHECK_FALSE(none.nearest);
  CHECK(describe_miss(wanted, none) == "no cached job for entry 'f' on any target");
}
