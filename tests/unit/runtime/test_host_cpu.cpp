// Unit tests for this machine's CPU as the loader sees it
// (src/runtime/host/host_cpu_check.cpp) and the host build choice (host_select).
#include "runtime/host/host_cpu_check.h"
#include "runtime/host/host_select.h"

#include "fixtures/cpu.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace kiln;
using namespace kiln::runtime;

namespace {

// This CPU's table features as a stored feature string: "+a,+b,-c,...".
std::string this_cpu_string() {
  std::string out;
#if defined(__x86_64__)
  for (const core::X86FeatureBit& f : core::x86_feature_bits())
#else
  for (const core::Arm64FeatureBit& f : core::arm64_feature_bits())
#endif
    out += std::string(out.empty() ? "" : ",") +
           (host_cpu_features().present.count(f.name) ? "+" : "-") + f.name;
  return out;
}

core::JobRecord job(std::string target, std::string features) {
  core::JobRecord j;
  j.target = std::move(target);
  j.cpu = "testcpu";
  j.features = std::move(features);
  return j;
}

} // namespace

TEST_CASE("host_cpu: the loader's features are the one reader's") {
  CHECK(&host_cpu_features() == &core::this_host_cpu().features);
}

TEST_CASE("host_cpu: the C library's copy of the cpuid leaves reads as cpuid itself") {
  // this_host_cpu() takes the leaves glibc keeps from glibc; reading every
  // leaf with cpuid must give the same features and the same identity, or a
  // load would check images against another CPU than this one.
  const core::HostCpu& kept = core::this_host_cpu();
  core::HostCpu direct = core::read_host_cpu_by_cpuid();
  CHECK(kept.features.present == direct.features.present);
  CHECK(kept.identity == direct.identity);
  CHECK(kept.features.present.size() > 10);
}

TEST_CASE("this CPU's features come from the hardware") {
#if defined(__x86_64__)
  CHECK(host_cpu_features().present.count("sse2"));
  CHECK(host_cpu_features().present.count("64bit"));
  CHECK(host_cpu_features().present.count("cx8"));
#else
  CHECK(host_cpu_features().present.count("neon"));
#endif
  CHECK(check_host_job(job("host", this_cpu_string())));
}

TEST_CASE("a job needing a feature this CPU lacks is refused, naming it and the CPU") {
  std::string lacking = kiln::test::lacking_cpu_feature();
  if (lacking.empty()) {
    MESSAGE("skipped: this CPU has every feature the table knows");
    return;
  }
  auto st = check_host_job(job("host:testcpu", "+" + lacking));
  REQUIRE_FALSE(st);
  CHECK(st.error().code == Code::unavailable);
  CHECK(st.error().message.find("built for CPU testcpu") != std::string::npos);
  CHECK(st.error().message.find("lacks: " + lacking) != std::string::npos);
  CHECK(host_cpu_gap(job("host:testcpu", "+" + lacking)).missing ==
        std::vector<std::string>{lacking});
}

TEST_CASE("an unknown feature is refused unless the code was built for this very CPU") {
  auto portable = check_host_job(job("host:testcpu", "+no-such-feature"));
  REQUIRE_FALSE(portable);
  CHECK(portable.error().message.find("cannot check on this machine: no-such-feature") !=
        std::string::npos);
  // Plain host code whose every known feature is this CPU's: built here.
  CHECK(check_host_job(job("host", this_cpu_string() + ",+no-such-feature")));
  // The same string under a portable spec is not "this very CPU".
  CHECK_FALSE(check_host_job(job("host:testcpu", this_cpu_string() + ",+no-such-feature")));
}

TEST_CASE("the host build chosen is this CPU's own, else the richest portable one that runs") {
  std::string here = this_cpu_string();
  CHECK(choose_host_build({{"host:a", "+sse2"}, {"host", here}}) == "host");
  CHECK(choose_host_build({{"host:a", "+sse2"}, {"host:b", "+cx8,+sse2"}}) == "host:b");
  CHECK(choose_host_build({{"host:a", "+no-such-feature"}}).empty());
  CHECK(choose_host_build({{"host:a", "+sse2"}, {"hostile", "+sse2"}}) == "host:a");
  CHECK(choose_host_build({}).empty());
  auto t = choose_host_target({"sm_90", "host:x86-64-v2"});
  REQUIRE(t);
  CHECK(*t == "host:x86-64-v2");
}
