// Host CPU features as Kiln's own concept, without LLVM: the LLVM feature
// names that matter for host code, where each is found on a CPU (a cpuid bit
// and the OS state it needs on x86-64, a HWCAP bit on AArch64), and the check
// that a job's "+feature" list runs on a CPU with a given set of features;
// and the one place that reads this machine's CPU (this_host_cpu), for the
// loader's check (runtime/host/host_cpu_check.h) and the request memo's key alike.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::core {

/// Where one LLVM feature name is found on x86-64: cpuid(leaf, subleaf)
/// register `reg` (0 eax, 1 ebx, 2 ecx, 3 edx) bit `bit`, and the XCR0 bits
/// the OS must enable for its register state (0: none). reg -1: every
/// x86-64 CPU has it.
/// The names are held in the entries, not pointed to: a table of pointers
/// is relocated, so written to, in every process that loads libkiln.
constexpr size_t kCpuFeatureNameMax = 20;

struct X86FeatureBit {
  char name[kCpuFeatureNameMax];
  uint32_t leaf;
  uint32_t subleaf;
  int reg;
  int bit;
  uint64_t xcr0;
};

/// Where one LLVM feature name is found on AArch64: bit `bit` of AT_HWCAP
/// (hwcap 1) or AT_HWCAP2 (hwcap 2); hwcap 0: every AArch64 CPU has it.
struct Arm64FeatureBit {
  char name[kCpuFeatureNameMax];
  int hwcap;
  int bit;
};

/// The x86-64 table.
std::span<const X86FeatureBit> x86_feature_bits();

/// The AArch64 table.
std::span<const Arm64FeatureBit> arm64_feature_bits();

/// Whether the table of this machine's architecture knows `name`.
bool known_cpu_feature(std::string_view name);

/// The "+name" entries of a stored feature string ("+avx2,-avx512f,+fma"),
/// sorted: what a job needs of the CPU it runs on.
std::vector<std::string> required_cpu_features(std::string_view features);

/// A CPU as the loader sees it: the table features it has.
struct CpuFeatures {
  std::set<std::string> present;
};

/// What stops code built with `features` from running on `cpu`.
struct CpuGap {
  std::vector<std::string> missing; ///< known features the CPU lacks
  std::vector<std::string> unknown; ///< required features the table does not know
  bool runs() const { return missing.empty() && unknown.empty(); }
};

/// This machine's CPU, read once per process: the table's features it has
/// (with the OS state they need), and its identity for keys that must not
/// carry one machine's host code to another: x86-64's vendor, family, model
/// and every cpuid register the table reads (leaf 1's EBX, the APIC id of
/// whichever core runs the read, left out) with XCR0; AArch64's
/// /proc/cpuinfo description and HWCAP words. One reader, so a feature the
/// table learns (Zen 5's PREFETCHI in leaf 0x80000021) reaches both.
struct HostCpu {
  CpuFeatures features;
  std::string identity;
};
const HostCpu& this_host_cpu();

/// This machine's CPU read again with a cpuid instruction for every leaf,
/// none taken from the C library's copy of the leaves it keeps (which
/// this_host_cpu() uses, to spare a virtual machine's traps): the two must
/// be equal, feature for feature and in identity.
HostCpu read_host_cpu_by_cpuid();

/// Compares a job's stored feature string with a CPU's features.
CpuGap compare_cpu_features(std::string_view features, const CpuFeatures& cpu);

/// Whether `features` describes exactly `cpu` for every feature the table
/// knows (each "+" present, each "-" absent): code built for this very CPU.
bool same_cpu_features(std::string_view features, const CpuFeatures& cpu);

} // namespace kiln::core
