// Unit tests for lld behind libkiln-link (src/link/plugin.cpp,
// src/link/lld/host_link.cpp): a closure's host objects linked into one shared
// object, lld's own diagnostics, and what a linker library that is switched
// off or missing gives. Real linking of real objects, compiled here.
#include "fixtures/cache.hpp"
#include "fixtures/process.hpp"
#include "link/plugin.h"
#include "support/fault.h"

#include <set>
#include <string>

using namespace kiln;
using namespace kiln::test;

TEST_CASE("lld links a closure's host objects into one shared object defining every member") {
  TempDir dir = temp_dir("kiln-link-test");
  ClosureArtifacts c = compile_closure(dir, "nested.ll", "nest_a", "host", "obj");
  REQUIRE(c.blobs.size() == 3);
  auto image = link::link_host_image(c.blobs, c.names);
  INFO((image ? std::string() : image.error().message));
  REQUIRE(image);
  auto elf = read_elf(*image);
  REQUIRE(elf);
  CHECK(elf->type == 3); // ET_DYN
  std::set<std::string> defined = defined_symbols(*elf);
  for (const std::string& s : c.symbols)
    CHECK_MESSAGE(defined.count(s), s);
  CHECK(std::string(link::lld_fingerprint()).rfind("lld ", 0) == 0);

  // No build id or time stamp: the same objects give the same bytes.
  auto again = link::link_host_image(c.blobs, c.names);
  REQUIRE(again);
  CHECK(*again == *image);
}

TEST_CASE("lld refuses objects that are not objects, with its own diagnostics") {
  auto image = link::link_host_image({"this is not an object file"}, {"bogus"});
  REQUIRE_FALSE(image);
  CHECK(image.error().code != Code::ok);
  CHECK_FALSE(image.error().message.empty());
}

TEST_CASE("lld: a symbol defined twice fails naming the first input and the symbol") {
  TempDir dir = temp_dir("kiln-link-test");
  ClosureArtifacts c = compile_closure(dir, "nested.ll", "nest_a", "host", "obj");
  REQUIRE_FALSE(c.blobs.empty());
  auto image = link::link_host_image({c.blobs[0], c.blobs[0]}, {c.names[0], "copy"});
  REQUIRE_FALSE(image);
  INFO(image.error().message);
  CHECK(image.error().code == Code::internal);
  CHECK(image.error().message.rfind("lld failed to link 2 object(s) (first: " + c.names[0] + "): ",
                                    0) == 0);
  CHECK(image.error().message.find("duplicate symbol") != std::string::npos);

  auto none = link::link_host_image({}, {});
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "nothing to link");
}

TEST_CASE("lld: an injected link failure names its point") {
  fault::set_plan("link:host");
  std::string injected = fault::message("link:host");
  auto image = link::link_host_image({"unused"}, {"unused"});
  fault::set_plan("");
  REQUIRE_FALSE(image);
  INFO(image.error().message);
  CHECK(image.error().code == Code::internal);
  CHECK(image.error().message == injected);
  CHECK(image.error().message.find("link:host") != std::string::npos);
}

TEST_CASE("lld: an empty KILN_LINK_LIBRARY switches the linker off") {
  if (child_role() != "link-off") {
    check_child(run_child("lld: an empty KILN_LINK_LIBRARY switches the linker off", "link-off",
                          {"KILN_LINK_LIBRARY="}));
    return;
  }
  child_ran();
  auto host = link::link_host_image({"x"}, {"x"});
  REQUIRE_FALSE(host);
  CHECK(host.error().code == Code::unavailable);
  CHECK(host.error().message == "the linker is disabled (KILN_LINK_LIBRARY is empty)");
  auto amd = link::link_amdgpu_image({"x"}, {"x"}, "gfx942", "");
  REQUIRE_FALSE(amd);
  CHECK(amd.error().code == Code::unavailable);
  // The fingerprint is the one built in, whether or not the library loads.
  CHECK(std::string(link::lld_fingerprint()).rfind("lld ", 0) == 0);
}

TEST_CASE("lld: a KILN_LINK_LIBRARY pointing nowhere is unavailable naming it") {
  const std::string nowhere = "/nonexistent/kiln-unit/libkiln-link.so";
  if (child_role() != "link-nowhere") {
    check_child(run_child("lld: a KILN_LINK_LIBRARY pointing nowhere is unavailable naming it",
                          "link-nowhere", {"KILN_LINK_LIBRARY=" + nowhere}));
    return;
  }
  child_ran();
  auto host = link::link_host_image({"x"}, {"x"});
  REQUIRE_FALSE(host);
  INFO(host.error().message);
  CHECK(host.error().code == Code::unavailable);
  CHECK(host.error().message.rfind("cannot load the linker library '" + nowhere + "': ", 0) == 0);
}
