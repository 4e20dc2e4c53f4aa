// Unit tests for Kiln's keys (src/core/keys.cpp): job keys, deferred symbols,
// closure keys.
#include "fixtures/ir.hpp"

#include <kiln/compiler.hpp>

#include <llvm/IR/Function.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

core::KeyComponents base_components() {
  core::KeyComponents c;
  c.module_hash = hash128("module");
  c.identity.entry = "f";
  c.identity.target = host();
  c.identity.options = {};
  c.toolchain = codegen::toolchain_fingerprint(c.identity.target);
  return c;
}


} // namespace

TEST_CASE("job_key is stable for equal inputs and changes with every component") {
  core::KeyComponents base = base_components();
  Hash128 k = core::job_key(base);
  CHECK(core::job_key(base_components()) == k);

  std::vector<std::pair<const char*, core::KeyComponents>> variants;
  auto add = [&](const char* what, auto mutate) {
    core::KeyComponents c = base_components();
    mutate(c);
    variants.emplace_back(what, c);
  };
  add("module hash", [](auto& c) { c.module_hash = hash128("module2"); });
  add("entry", [](auto& c) { c.identity.entry = "g"; });
  add("target spec", [](auto& c) { c.identity.target.spec = "host2"; });
  add("target kind", [](auto& c) { c.identity.target.kind = core::TargetKind::nvptx; });
  add("triple", [](auto& c) { c.identity.target.triple = "aarch64-unknown-linux-gnu"; });
  add("cpu", [](auto& c) { c.identity.target.cpu = c.identity.target.cpu + "x"; });
  add("features", [](auto& c) { c.identity.target.features += ",+madeup"; });
  add("opt level", [](auto& c) { c.identity.options.opt_level = 3; });
  add("opt level 0", [](auto& c) { c.identity.options.opt_level = 0; });
  add("debug", [](auto& c) { c.identity.options.debug = true; });
  add("toolchain", [](auto& c) { c.toolchain += " (patched)"; });
  // Field boundaries matter: moving a character from one field to the next
  // must not collide.
  add("boundary", [](auto& c) {
    c.identity.target.cpu = c.identity.target.cpu + ",";
    c.identity.target.features = c.identity.target.features.substr(
        std::min<size_t>(1, c.identity.target.features.size()));
  });

  std::set<Hash128> all{k};
  for (auto& [what, c] : variants) {
    INFO(what);
    Hash128 v = core::job_key(c);
    CHECK(v != k);
    CHECK(core::job_key(c) == v); // stable
    all.insert(v);
  }
  CHECK(all.size() == variants.size() + 1); // pairwise distinct
}

TEST_CASE("deferred_symbol: __kiln_deferred_ + 32 hex, from identity but not module hash") {
  core::KeyComponents a = base_components();
  std::string s = core::deferred_symbol(a.identity);
  CHECK(is_deferred_symbol(s));
  CHECK(core::deferred_symbol(base_components().identity) == s);

  // The module hash changes the job key but not the symbol parents use.
  core::KeyComponents b = base_components();
  b.module_hash = hash128("a different body");
  b.toolchain = "other toolchain";
  CHECK(core::job_key(a) != core::job_key(b));
  CHECK(core::deferred_symbol(b.identity) == s);

  auto differs = [&](auto mutate) {
    core::KeyComponents c = base_components();
    mutate(c);
    std::string t = core::deferred_symbol(c.identity);
    CHECK(is_deferred_symbol(t));
    return t != s;
  };
  CHECK(differs([](auto& c) { c.identity.entry = "g"; }));
  CHECK(differs([](auto& c) { c.identity.target.spec = "other"; }));
  CHECK(differs([](auto& c) { c.identity.target.cpu += "x"; }));
  // A job's features (its PTX ISA) are its own; its parents name it first.
  CHECK_FALSE(differs([](auto& c) { c.identity.target.features += ",+x"; }));
  CHECK(differs([](auto& c) { c.identity.target.triple = "aarch64-unknown-linux-gnu"; }));
  CHECK(differs([](auto& c) { c.identity.options.opt_level = 0; }));
  CHECK(differs([](auto& c) { c.identity.options.debug = true; }));

  // Not the same hash as the job key.
  CHECK(s.substr(16) != core::job_key(a).hex());
}

TEST_CASE("closure_key is independent of member order and depends on members and root") {
  Hash128 root = hash128("root");
  core::ClosureMap m1{{"sym_a", hash128("a")}, {"sym_b", hash128("b")}, {"sym_c", hash128("c")}};
  core::ClosureMap m2{{"sym_c", hash128("c")}, {"sym_a", hash128("a")}, {"sym_b", hash128("b")}};
  Hash128 k = core::closure_key(root, m1);
  CHECK(core::closure_key(root, m2) == k);
  CHECK(core::closure_key(root, m1) == k);

  CHECK(core::closure_key(hash128("other root"), m1) != k);
  core::ClosureMap fewer{{"sym_a", hash128("a")}, {"sym_b", hash128("b")}};
  CHECK(core::closure_key(root, fewer) != k);
  core::ClosureMap other_job{{"sym_a", hash128("a")}, {"sym_b", hash128("b2")},
                               {"sym_c", hash128("c")}};
  CHECK(core::closure_key(root, other_job) != k);
  // Swapping which symbol maps to which job is a different closure.
  core::ClosureMap swapped{{"sym_a", hash128("b")}, {"sym_b", hash128("a")},
                             {"sym_c", hash128("c")}};
  CHECK(core::closure_key(root, swapped) != k);
}
