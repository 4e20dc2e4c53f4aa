// Unit tests for host CPU features as Kiln's own concept
// (src/core/host_cpu.cpp) and the host spec forms of src/core/target.cpp.
#include "core/host_cpu.h"
#include "core/target.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace kiln::core;

TEST_CASE("the x86-64 table maps the code-generation features to cpuid bits") {
  // A name is listed once, except where vendors report it in different
  // places (either entry makes it present).
  std::set<std::string> names;
  const std::set<std::string> two_places{"prefetchi"};
  for (const X86FeatureBit& f : x86_feature_bits()) {
    CHECK_MESSAGE((names.insert(f.name).second || two_places.count(f.name)),
                  f.name << " listed twice");
    if (f.reg >= 0) {
      CHECK(f.reg <= 3);
      CHECK(f.bit >= 0);
      CHECK(f.bit < 32);
    }
  }
  for (const char* want :
       {"sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi",
        "bmi2", "lzcnt", "movbe", "aes", "pclmul", "sha", "adx", "rdrnd", "rdseed", "xsave",
        "xsaveopt", "xsavec", "xsaves", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl",
        "avx512vnni", "avx512bf16", "avx512fp16", "avx512ifma", "avx512vbmi", "avx512vbmi2",
        "avx512bitalg", "avx512vpopcntdq", "avxvnni", "cx16", "amx-tile"})
    CHECK_MESSAGE(names.count(want), want << " is not in the table");
  // AVX and AVX-512 need the OS to save their registers, not just the bit.
  for (const X86FeatureBit& f : x86_feature_bits()) {
    std::string n = f.name;
    if (n == "avx" || n == "avx2" || n == "fma")
      CHECK(f.xcr0 == 0x6);
    if (n.rfind("avx512", 0) == 0)
      CHECK(f.xcr0 == 0xe6);
  }
  std::set<std::string> arm;
  for (const Arm64FeatureBit& f : arm64_feature_bits())
    CHECK(arm.insert(f.name).second);
  CHECK(arm.count("neon"));
  CHECK(arm.count("sve2"));
}

TEST_CASE("a job's required features are its + entries, sorted") {
  auto req = required_cpu_features("+sse2,-avx512f,+avx2,+avx2,-fma,+aes");
  CHECK(req == std::vector<std::string>{"aes", "avx2", "sse2"});
  CHECK(required_cpu_features("").empty());
}

#if defined(__x86_64__)
TEST_CASE("the check names missing features and unknown ones apart") {
  CpuFeatures cpu{{"sse2", "avx", "avx2"}};
  CpuGap ok = compare_cpu_features("+avx,+avx2,+sse2,-avx512f", cpu);
  CHECK(ok.runs());
  CpuGap gap = compare_cpu_features("+avx2,+avx512bw,+avx512f,+sse2", cpu);
  CHECK_FALSE(gap.runs());
  CHECK(gap.missing == std::vector<std::string>{"avx512bw", "avx512f"});
  CHECK(gap.unknown.empty());
  CpuGap unknown = compare_cpu_features("+avx2,+no-such-feature", cpu);
  CHECK_FALSE(unknown.runs());
  CHECK(unknown.missing.empty());
  CHECK(unknown.unknown == std::vector<std::string>{"no-such-feature"});
  CHECK_FALSE(known_cpu_feature("no-such-feature"));
  CHECK(known_cpu_feature("avx512vpopcntdq"));
}

TEST_CASE("the same CPU matches every known feature both ways") {
  CpuFeatures cpu{{"sse2", "avx"}};
  CHECK(same_cpu_features("+avx,+sse2,-avx2,+no-such-feature", cpu));
  CHECK_FALSE(same_cpu_features("+avx,+sse2,+avx2", cpu)); // needs more
  CHECK_FALSE(same_cpu_features("+sse2,-avx", cpu));       // built without one it has
}
#endif

TEST_CASE("host and host:CPU are host specs; the image arch tells CPUs apart") {
  CHECK(target_kind("host:x86-64-v3") == TargetKind::host);
  CHECK(target_kind("host:neoverse-v1") == TargetKind::host);
  CHECK(is_host_spec("host"));
  CHECK(is_host_spec("host:x86-64-v2"));
  CHECK_FALSE(is_host_spec("hostile"));
  CHECK_FALSE(is_host_spec("sm_90"));
  CHECK(host_spec_cpu("host:x86-64-v3") == "x86-64-v3");
  CHECK(host_spec_cpu("host").empty());
  CHECK(host_spec_cpu("sm_90").empty());
  CHECK(image_arch("host") == host_arch());
  CHECK(image_arch("host:x86-64-v3") == std::string(host_arch()) + ":x86-64-v3");
  CHECK(image_arch("host:x86-64-v3") != image_arch("host:x86-64-v4"));
  CHECK(image_arch("host:x86-64-v3") != image_arch("host"));
  CHECK(image_arch("sm_90") == "sm_90");
}
