// Unit tests for portable host targets (host:CPU in src/codegen/llvm_target.cpp):
// this machine's triple, the named CPU and that CPU's own ISA features.
#include "codegen/llvm_target.h"
#include "core/host_cpu.h"

#include <doctest/doctest.h>

#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::codegen;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (size_t at = 0; at < s.size();) {
    size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma - at));
    at = comma == std::string::npos ? s.size() : comma + 1;
  }
  return out;
}

bool has(const std::vector<std::string>& v, const char* f) {
  return std::find(v.begin(), v.end(), f) != v.end();
}

} // namespace

#if defined(__x86_64__)
TEST_CASE("host:x86-64-v3 has AVX2 and what it implies, not AVX-512") {
  auto t = resolve_target("host:x86-64-v3");
  REQUIRE(t);
  CHECK(t->spec == "host:x86-64-v3");
  CHECK(t->kind == TargetKind::host);
  CHECK(t->cpu == "x86-64-v3");
  auto host = resolve_target("host");
  REQUIRE(host);
  CHECK(t->triple == host->triple);
  auto f = split(t->features);
  CHECK(std::is_sorted(f.begin(), f.end()));
  CHECK(has(f, "+avx2"));
  CHECK(has(f, "+avx")); // implied by avx2
  CHECK(has(f, "+fma"));
  CHECK(has(f, "+bmi2"));
  CHECK(has(f, "+sse4.2"));
  CHECK_FALSE(has(f, "+avx512f"));
  auto v4 = resolve_target("host:x86-64-v4");
  REQUIRE(v4);
  CHECK(has(split(v4->features), "+avx512f"));
  auto v2 = resolve_target("host:x86-64-v2");
  REQUIRE(v2);
  CHECK_FALSE(has(split(v2->features), "+avx"));
  // The same spec resolves the same way: it is part of every job key.
  CHECK(resolve_target("host:x86-64-v3")->features == t->features);
  REQUIRE(create_target_machine(*t, CodegenOptions{}));
}
#endif

#if defined(__x86_64__)
TEST_CASE("the loader's feature table knows every feature of the common portable CPUs") {
  for (const char* cpu : {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "skylake-avx512",
                          "icelake-server", "sapphirerapids", "znver3", "znver4"}) {
    auto t = resolve_target(std::string("host:") + cpu);
    REQUIRE_MESSAGE(t, std::string(cpu));
    for (const std::string& f : split(t->features))
      CHECK_MESSAGE(core::known_cpu_feature(f.substr(1)), std::string(cpu) << " needs " << f);
  }
}
#endif

TEST_CASE("host: with an unknown CPU names the accepted forms") {
  auto t = resolve_target("host:no-such-cpu");
  REQUIRE_FALSE(t);
  CHECK(t.error().code == Code::invalid_argument);
  CHECK(t.error().message.find("no-such-cpu") != std::string::npos);
  CHECK(t.error().message.find("host:x86-64-v3") != std::string::npos);
  CHECK_FALSE(resolve_target("host:"));
}
