// Unit tests for the linkers behind the image layer (src/link/): lld through
// libkiln-link for host shared objects, nvJitLink for cubins. Real linkers on
// real objects, compiled here by the driver.
#include "ir_fixtures.hpp"
#include "link/nvjitlink.h"
#include "link/plugin.h"
#include "storage/local/store.h"
#include "support/elf.h"

#include <kiln/compiler.hpp>

#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

struct Compiled {
  std::vector<std::string> blobs; ///< each member's artifact of `format`
  std::vector<std::string> names; ///< job keys
  std::set<std::string> symbols; ///< members' deferred symbols
};

// Compiles `entry` of a fixture for `target` into a fresh cache, without
// linking an image, and reads back the closure's artifacts of `format`.
Compiled compile(const TempDir& dir, const std::string& file, const std::string& entry,
                 const std::string& target, const std::string& format) {
  CompileRequest req;
  req.inputs = {SourceInput::memory(file, data_file(file))};
  req.entries = {entry};
  req.targets = {target};
  req.link_images = false;
  req.remote = "off";
  req.jobs = 2;
  auto plan = Plan::create(req);
  REQUIRE(plan);
  std::string cache = dir.path() + "/kiln.db";
  auto report = plan->run(cache);
  REQUIRE(report);
  REQUIRE(report->ok());
  auto store = storage::Store::open(cache);
  REQUIRE(store);
  auto key = (*store)->resolve_name(entry, report->roots[0].target);
  REQUIRE(key);
  auto closure = (*store)->get_closure(*key);
  REQUIRE(closure);
  Compiled out;
  for (const core::ClosureMember& m : closure->members) {
    auto blob = (*store)->get_artifact(m.job, format);
    REQUIRE(blob);
    out.blobs.push_back(blob.take());
    out.names.push_back(m.job.hex());
    out.symbols.insert(m.symbol);
  }
  return out;
}

} // namespace

TEST_CASE("lld links a closure's host objects into one shared object defining every member") {
  auto dir = TempDir::create("kiln-link-test");
  REQUIRE(dir);
  Compiled c = compile(*dir, "nested.ll", "nest_a", "host", "obj");
  REQUIRE(c.blobs.size() == 3);
  auto image = link::link_host_image(c.blobs, c.names);
  INFO((image ? std::string() : image.error().message));
  REQUIRE(image);
  auto elf = read_elf(*image);
  REQUIRE(elf);
  CHECK(elf->type == 3); // ET_DYN
  std::set<std::string> defined;
  for (const ElfSymbol& s : elf->symbols)
    if (s.defined)
      defined.insert(s.name);
  for (const std::string& s : c.symbols)
    CHECK_MESSAGE(defined.count(s), s);
  CHECK(std::string(link::lld_fingerprint()).rfind("lld ", 0) == 0);
}

TEST_CASE("lld refuses objects that are not objects, with its own diagnostics") {
  auto image = link::link_host_image({"this is not an object file"}, {"bogus"});
  REQUIRE_FALSE(image);
  CHECK(image.error().code != Code::ok);
  CHECK_FALSE(image.error().message.empty());
}

TEST_CASE("nvJitLink links a closure's sm_90 code into a cubin, or says why it cannot") {
  auto fp = link::nvjitlink_fingerprint();
  if (!fp) {
    CHECK(fp.error().code == Code::unavailable);
    CHECK(fp.error().message.find("nvJitLink") != std::string::npos);
    MESSAGE("nvJitLink is not installed: " << fp.error().message);
    return;
  }
  CHECK(fp->rfind("nvJitLink ", 0) == 0);
  auto dir = TempDir::create("kiln-nvjitlink-test");
  REQUIRE(dir);
  Compiled c = compile(*dir, "gpu_nvptx.ll", "k_fact", "sm_90", "ptx");
  std::vector<link::NvInput> in;
  for (size_t i = 0; i < c.blobs.size(); ++i)
    in.push_back({c.names[i], c.blobs[i], true});
  auto cubin = link::nvjitlink_cubin(in, "sm_90");
  INFO((cubin ? std::string() : cubin.error().message));
  REQUIRE(cubin);
  auto elf = read_elf(*cubin);
  REQUIRE(elf);
  CHECK(elf->machine == kElfMachineCuda);

  // A broken input is refused with nvJitLink's own log in the message.
  auto bad = link::nvjitlink_cubin({{"broken", ".version 99.9\n garbage", true}}, "sm_90");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("broken") != std::string::npos);
}
