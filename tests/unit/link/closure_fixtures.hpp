// A closure's stored artifacts, compiled here by the driver: what the linkers
// behind the image layer get when an image must be made.
#pragma once

#include "ir_fixtures.hpp"
#include "storage/local/store.h"
#include "support/elf.h"

#include <kiln/compiler.hpp>

#include <set>
#include <string>
#include <vector>

namespace kiln::test {

struct Compiled {
  std::vector<std::string> blobs; ///< each member's artifact of `format`
  std::vector<std::string> names; ///< job keys
  std::set<std::string> symbols;  ///< members' deferred symbols
};

/// Compiles `entry` of a fixture for `target` into a fresh cache in `dir`,
/// without linking an image, and reads back the closure's artifacts of
/// `format`.
inline Compiled compile_closure(const TempDir& dir, const std::string& file,
                                const std::string& entry, const std::string& target,
                                const std::string& format) {
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

/// The names an ELF file defines.
inline std::set<std::string> defined_symbols(const ElfInfo& elf) {
  std::set<std::string> defined;
  for (const ElfSymbol& s : elf.symbols)
    if (s.defined)
      defined.insert(s.name);
  return defined;
}

} // namespace kiln::test
