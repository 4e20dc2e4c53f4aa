// Reading this CPU's features, and the refusal of host code that needs more.
#include "runtime/host/host_cpu.h"

#include "core/target.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

namespace {

#if defined(__x86_64__)
core::CpuFeatures read_features() {
  core::CpuFeatures out;
  unsigned max_basic = __get_cpuid_max(0, nullptr);
  unsigned max_ext = __get_cpuid_max(0x80000000, nullptr);
  uint64_t xcr0 = 0;
  unsigned a = 0, b = 0, c = 0, d = 0;
  // xgetbv faults unless the OS set CR4.OSXSAVE: ask cpuid first.
  if (max_basic >= 1 && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27))) {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t(hi) << 32) | lo;
  }
  // The table names about a hundred bits from a dozen leaves. Each cpuid
  // traps to the hypervisor in a virtual machine (10-15 us), so each leaf
  // is read once: the first host load pays a dozen, not two hundred.
  struct Leaf {
    unsigned leaf, subleaf;
    unsigned r[4];
  };
  std::vector<Leaf> read;
  auto regs = [&](unsigned leaf, unsigned subleaf) -> const unsigned* {
    for (const Leaf& l : read)
      if (l.leaf == leaf && l.subleaf == subleaf)
        return l.r;
    unsigned max = leaf >= 0x80000000 ? max_ext : max_basic;
    Leaf l{leaf, subleaf, {0, 0, 0, 0}};
    if (leaf <= max)
      __cpuid_count(leaf, subleaf, l.r[0], l.r[1], l.r[2], l.r[3]);
    read.push_back(l);
    return read.back().r;
  };
  for (const core::X86FeatureBit& f : core::x86_feature_bits()) {
    bool has = f.reg < 0;
    if (!has)
      has = (regs(f.leaf, f.subleaf)[f.reg] >> f.bit) & 1u;
    if (has && (xcr0 & f.xcr0) == f.xcr0)
      out.present.insert(f.name);
  }
  return out;
}
#elif defined(__aarch64__)
core::CpuFeatures read_features() {
  core::CpuFeatures out;
  unsigned long caps[3] = {~0ul, getauxval(AT_HWCAP), getauxval(AT_HWCAP2)};
  for (const core::Arm64FeatureBit& f : core::arm64_feature_bits())
    if (f.hwcap == 0 || ((caps[f.hwcap] >> f.bit) & 1ul))
      out.present.insert(f.name);
  return out;
}
#else
#error "unsupported host architecture"
#endif

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

} // namespace

const core::CpuFeatures& host_cpu_features() {
  static const core::CpuFeatures features = read_features(); // the CPU does not change
  return features;
}

core::CpuGap host_cpu_gap(const core::JobRecord& root) {
  // Every load of host code asks, and the answer depends only on the stored
  // feature string and target: a process loading many roots built for one
  // CPU parses their kilobyte of features once, not once per load.
  static std::mutex mu;
  static std::unordered_map<std::string, core::CpuGap> known;
  std::string key = root.target + '\n' + root.features;
  {
    std::lock_guard lock(mu);
    if (auto it = known.find(key); it != known.end())
      return it->second;
  }
  core::CpuGap gap = core::compare_cpu_features(root.features, host_cpu_features());
  // LLVM may name features newer than the table. Code built for this very
  // CPU (plain "host", every known feature as here) still runs: refusing it
  // would refuse a machine its own code.
  if (gap.missing.empty() && !gap.unknown.empty() && root.target == "host" &&
      core::same_cpu_features(root.features, host_cpu_features()))
    gap.unknown.clear();
  std::lock_guard lock(mu);
  if (known.size() >= 64) // a handful of CPUs in practice; never unbounded
    known.clear();
  known.emplace(std::move(key), gap);
  return gap;
}

Status check_host_job(const core::JobRecord& root) {
  core::CpuGap gap = host_cpu_gap(root);
  if (gap.runs())
    return Status::ok();
  std::string why = "host code for target " + root.target + " was built for CPU " +
                    (root.cpu.empty() ? std::string("(unnamed)") : root.cpu);
  if (!gap.missing.empty())
    why += " and needs CPU features this machine lacks: " + join(gap.missing);
  if (!gap.unknown.empty())
    why += std::string(gap.missing.empty() ? " and" : ";") +
           " needs CPU features the loader cannot check on this machine: " + join(gap.unknown);
  return make_error(Code::unavailable, why).with_target(root.target);
}

} // namespace kiln::runtime
