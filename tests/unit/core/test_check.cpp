// Unit tests for the checks of what Kiln is handed back (src/core/check.cpp):
// images against their closure, bundles whole, closures against their keys.
#include "core/check.h"

#include "fixtures/records.hpp"
#include "support/files.h"

#include <doctest/doctest.h>

#include <cctype>

using namespace kiln;
using namespace kiln::core;
using namespace kiln::test;

namespace {

// This test program itself: a real ELF file for the host's machine that
// defines `main`.
std::string self_elf() {
  auto bytes = read_file("/proc/self/exe");
  REQUIRE(bytes);
  return *bytes;
}

ClosureRecord closure_defining(const std::string& symbol, const std::string& target = "host") {
  ClosureRecord c;
  c.key = hash128("closure");
  c.root_job = hash128("root");
  c.target = target;
  c.members.push_back({symbol, c.root_job, "root"});
  return c;
}

} // namespace

TEST_CASE("check_image accepts an ELF of the right machine that defines every member") {
  CHECK(check_image(self_elf(), closure_defining("main")));
}

TEST_CASE("check_image refuses a missing member, another machine, and garbage, as corrupt") {
  std::string elf = self_elf();
  Status lacks = check_image(elf, closure_defining("__kiln_deferred_nowhere"));
  REQUIRE_FALSE(lacks);
  CHECK(lacks.error().code == Code::corrupt);
  CHECK(lacks.error().message.find("lacks __kiln_deferred_nowhere") != std::string::npos);

  Status machine = check_image(elf, closure_defining("main", "sm_90"));
  REQUIRE_FALSE(machine);
  CHECK(machine.error().code == Code::corrupt);
  CHECK(machine.error().message.find("ELF machine") != std::string::npos);

  Status garbage = check_image("not an image", closure_defining("main"));
  REQUIRE_FALSE(garbage);
  CHECK(garbage.error().code == Code::corrupt);
  Status truncated = check_image(elf.substr(0, 40), closure_defining("main"));
  CHECK_FALSE(truncated);
}

TEST_CASE("check_closure_key: the root must be a member and the key must match") {
  BundleData b = consistent_bundle();
  CHECK(check_closure_key(b.closures[0]));
  ClosureRecord wrong_key = b.closures[0];
  wrong_key.key = hash128("another");
  CHECK_FALSE(check_closure_key(wrong_key));
  ClosureRecord no_root = b.closures[0];
  no_root.root_job = hash128("not a member");
  Status s = check_closure_key(no_root);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("does not contain its root job") != std::string::npos);
}

TEST_CASE("check_bundle accepts a consistent bundle and names each kind of damage") {
  CHECK(check_bundle(consistent_bundle()));

  auto refused = [](const BundleData& b, const std::string& words) {
    Status s = check_bundle(b);
    REQUIRE_FALSE(s);
    CHECK(s.error().code == Code::corrupt);
    CHECK_MESSAGE(s.error().message.find(words) != std::string::npos, s.error().message);
  };
  BundleData renamed = consistent_bundle();
  renamed.jobs[0].record.entry = "other";
  refused(renamed, "does not match its key");

  BundleData symbol = consistent_bundle();
  symbol.jobs[0].record.symbol = "__kiln_deferred_00000000000000000000000000000000";
  refused(symbol, "wrong deferred symbol");

  BundleData empty = consistent_bundle();
  empty.jobs[0].artifacts.clear();
  refused(empty, "has no artifacts");

  BundleData missing = consistent_bundle();
  missing.jobs.clear();
  refused(missing, "which it lacks");

  BundleData open_ref = consistent_bundle();
  open_ref.jobs[0].refs.push_back({"__kiln_deferred_ffffffffffffffffffffffffffffffff", "child"});
  refused(open_ref, "unresolved");

  BundleData stray_name = consistent_bundle();
  stray_name.names[0].closure = hash128("elsewhere");
  refused(stray_name, "name root points at closure");

  BundleData bad_image = consistent_bundle();
  bad_image.images.push_back({{bad_image.closures[0].key, "x86_64-linux", "lld"}, "so", "junk"});
  refused(bad_image, "image of closure");

  // A name spelling a closure key (its own closure's, in either case, or
  // another's) would stand in for that key on a lookup.
  for (std::string key_name : {hash128("another root").hex(), hash128("x").hex()}) {
    BundleData shadow = consistent_bundle();
    for (char& ch : key_name)
      ch = char(std::toupper(static_cast<unsigned char>(ch)));
    shadow.names[0].name = key_name;
    refused(shadow, "name '" + key_name + "' has the form of a closure key");
  }
}

TEST_CASE("check_name refuses exactly the names of key form, in either case") {
  std::string key = hash128("a closure").hex();
  std::string upper = key;
  for (char& ch : upper)
    ch = char(std::toupper(static_cast<unsigned char>(ch)));
  for (const std::string& name : {key, upper, std::string(32, '0')}) {
    CAPTURE(name);
    Status s = check_name(name, "root");
    REQUIRE_FALSE(s);
    CHECK(s.error().code == Code::invalid_argument);
    CHECK(s.error().message.find("root name '" + name + "'") != std::string::npos);
    CHECK_FALSE(check_name(name, "library"));
  }
  // 31 or 33 digits, or a non-hex letter: an ordinary name.
  for (const std::string& name :
       {key.substr(1), key + "0", "g" + key.substr(1), std::string("nest_a"), std::string()})
    CHECK_MESSAGE(check_name(name, "root"), name);
}

TEST_CASE("job_key_of recomputes a stored job's key; malformed options are corrupt") {
  JobRecord j = consistent_job("f");
  auto k = job_key_of(j);
  REQUIRE(k);
  CHECK(*k == j.key);
  j.options = "-O9";
  auto bad = job_key_of(j);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == Code::corrupt);
}
