// The feature tables and the check. The x86-64 bits follow the Intel and AMD
// cpuid documentation; the AArch64 bits are Linux's HWCAP_* values.
#include "core/host_cpu.h"

#if defined(__x86_64__)
#include <cpuid.h>
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define KILN_LIBC_CPUID 1
#endif
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace kiln::core {

namespace {

constexpr uint64_t kSse = 0;          // SSE state: the x86-64 ABI needs it, always enabled
constexpr uint64_t kAvx = 0x6;        // XCR0 SSE and AVX (ymm) state
constexpr uint64_t kAvx512 = 0xe6;    // and opmask, zmm0-15 upper halves, zmm16-31
constexpr uint64_t kAmx = 0x60000;    // XTILECFG and XTILEDATA

enum Reg { eax, ebx, ecx, edx };

constexpr X86FeatureBit kX86[] = {
    // Baseline of every x86-64 CPU (no cpuid bit to test).
    {"64bit", 0, 0, -1, 0, 0},
    {"nopl", 0, 0, -1, 0, 0},
    // cpuid 1
    {"x87", 1, 0, edx, 0, 0},
    {"cx8", 1, 0, edx, 8, 0},
    {"cmov", 1, 0, edx, 15, 0},
    {"mmx", 1, 0, edx, 23, 0},
    {"fxsr", 1, 0, edx, 24, 0},
    {"sse", 1, 0, edx, 25, kSse},
    {"sse2", 1, 0, edx, 26, kSse},
    {"sse3", 1, 0, ecx, 0, kSse},
    {"pclmul", 1, 0, ecx, 1, kSse},
    {"ssse3", 1, 0, ecx, 9, kSse},
    {"fma", 1, 0, ecx, 12, kAvx},
    {"cx16", 1, 0, ecx, 13, 0},
    {"sse4.1", 1, 0, ecx, 19, kSse},
    {"sse4.2", 1, 0, ecx, 20, kSse},
    {"crc32", 1, 0, ecx, 20, 0},
    {"movbe", 1, 0, ecx, 22, 0},
    {"popcnt", 1, 0, ecx, 23, 0},
    {"aes", 1, 0, ecx, 25, kSse},
    {"xsave", 1, 0, ecx, 26, 0},
    {"avx", 1, 0, ecx, 28, kAvx},
    {"f16c", 1, 0, ecx, 29, kAvx},
    {"rdrnd", 1, 0, ecx, 30, 0},
    // cpuid 7.0
    {"fsgsbase", 7, 0, ebx, 0, 0},
    {"sgx", 7, 0, ebx, 2, 0},
    {"bmi", 7, 0, ebx, 3, 0},
    {"hle", 7, 0, ebx, 4, 0},
    {"avx2", 7, 0, ebx, 5, kAvx},
    {"bmi2", 7, 0, ebx, 8, 0},
    {"ermsb", 7, 0, ebx, 9, 0},
    {"invpcid", 7, 0, ebx, 10, 0},
    {"rtm", 7, 0, ebx, 11, 0},
    {"avx512f", 7, 0, ebx, 16, kAvx512},
    {"avx512dq", 7, 0, ebx, 17, kAvx512},
    {"rdseed", 7, 0, ebx, 18, 0},
    {"adx", 7, 0, ebx, 19, 0},
    {"avx512ifma", 7, 0, ebx, 21, kAvx512},
    {"clflushopt", 7, 0, ebx, 23, 0},
    {"clwb", 7, 0, ebx, 24, 0},
    {"avx512cd", 7, 0, ebx, 28, kAvx512},
    {"sha", 7, 0, ebx, 29, kSse},
    {"avx512bw", 7, 0, ebx, 30, kAvx512},
    {"avx512vl", 7, 0, ebx, 31, kAvx512},
    {"prefetchwt1", 7, 0, ecx, 0, 0},
    {"avx512vbmi", 7, 0, ecx, 1, kAvx512},
    {"pku", 7, 0, ecx, 3, 0},
    {"waitpkg", 7, 0, ecx, 5, 0},
    {"avx512vbmi2", 7, 0, ecx, 6, kAvx512},
    {"shstk", 7, 0, ecx, 7, 0},
    {"gfni", 7, 0, ecx, 8, kSse},
    {"vaes", 7, 0, ecx, 9, kAvx},
    {"vpclmulqdq", 7, 0, ecx, 10, kAvx},
    {"avx512vnni", 7, 0, ecx, 11, kAvx512},
    {"avx512bitalg", 7, 0, ecx, 12, kAvx512},
    {"avx512vpopcntdq", 7, 0, ecx, 14, kAvx512},
    {"rdpid", 7, 0, ecx, 22, 0},
    {"kl", 7, 0, ecx, 23, 0},
    {"cldemote", 7, 0, ecx, 25, 0},
    {"movdiri", 7, 0, ecx, 27, 0},
    {"movdir64b", 7, 0, ecx, 28, 0},
    {"enqcmd", 7, 0, ecx, 29, 0},
    {"fsrm", 7, 0, edx, 4, 0},
    {"uintr", 7, 0, edx, 5, 0},
    {"avx512vp2intersect", 7, 0, edx, 8, kAvx512},
    {"serialize", 7, 0, edx, 14, 0},
    {"tsxldtrk", 7, 0, edx, 16, 0},
    {"pconfig", 7, 0, edx, 18, 0},
    {"amx-bf16", 7, 0, edx, 22, kAmx},
    {"avx512fp16", 7, 0, edx, 23, kAvx512},
    {"amx-tile", 7, 0, edx, 24, kAmx},
    {"amx-int8", 7, 0, edx, 25, kAmx},
    // cpuid 7.1
    {"sha512", 7, 1, eax, 0, kAvx},
    {"sm3", 7, 1, eax, 1, kAvx},
    {"sm4", 7, 1, eax, 2, kAvx},
    {"raoint", 7, 1, eax, 3, 0},
    {"avxvnni", 7, 1, eax, 4, kAvx},
    {"avx512bf16", 7, 1, eax, 5, kAvx512},
    {"cmpccxadd", 7, 1, eax, 7, 0},
    {"amx-fp16", 7, 1, eax, 21, kAmx},
    {"hreset", 7, 1, eax, 22, 0},
    {"avxifma", 7, 1, eax, 23, kAvx},
    {"avxvnniint8", 7, 1, edx, 4, kAvx},
    {"avxneconvert", 7, 1, edx, 5, kAvx},
    {"amx-complex", 7, 1, edx, 8, kAmx},
    {"avxvnniint16", 7, 1, edx, 10, kAvx},
    {"prefetchi", 7, 1, edx, 14, 0},
    // AMD CPUs (Zen 5) report PREFETCHIT0/1 in cpuid 0x80000021 eax bit 20
    // instead, and LLVM reads both: either entry makes the feature present.
    {"prefetchi", 0x80000021, 0, eax, 20, 0},
    {"usermsr", 7, 1, edx, 15, 0},
    // cpuid 0xd.1: the xsave variants
    {"xsaveopt", 0xd, 1, eax, 0, 0},
    {"xsavec", 0xd, 1, eax, 1, 0},
    {"xsaves", 0xd, 1, eax, 3, 0},
    // cpuid 0x14: processor trace
    {"ptwrite", 0x14, 0, ebx, 4, 0},
    // cpuid 0x80000001
    {"sahf", 0x80000001, 0, ecx, 0, 0},
    {"lzcnt", 0x80000001, 0, ecx, 5, 0},
    {"sse4a", 0x80000001, 0, ecx, 6, kSse},
    {"prfchw", 0x80000001, 0, ecx, 8, 0},
    {"xop", 0x80000001, 0, ecx, 11, kAvx},
    {"lwp", 0x80000001, 0, ecx, 15, 0},
    {"fma4", 0x80000001, 0, ecx, 16, kAvx},
    {"tbm", 0x80000001, 0, ecx, 21, 0},
    {"mwaitx", 0x80000001, 0, ecx, 29, 0},
    // cpuid 0x80000008
    {"clzero", 0x80000008, 0, ebx, 0, 0},
    {"rdpru", 0x80000008, 0, ebx, 4, 0},
    {"wbnoinvd", 0x80000008, 0, ebx, 9, 0},
};

constexpr Arm64FeatureBit kArm64[] = {
    {"fp-armv8", 1, 0},  {"neon", 1, 1},       {"aes", 1, 3},          {"sha2", 1, 6},
    {"crc", 1, 7},       {"lse", 1, 8},        {"fullfp16", 1, 9},     {"rdm", 1, 12},
    {"jsconv", 1, 13},   {"complxnum", 1, 14}, {"rcpc", 1, 15},        {"ccpp", 1, 16},
    {"sha3", 1, 17},     {"sm4", 1, 19},       {"dotprod", 1, 20},     {"sve", 1, 22},
    {"fp16fml", 1, 23},  {"dit", 1, 24},       {"rcpc-immo", 1, 26},   {"flagm", 1, 27},
    {"ssbs", 1, 28},     {"sb", 1, 29},        {"pauth", 1, 30},       {"ccdp", 2, 0},
    {"sve2", 2, 1},      {"sve2-aes", 2, 2},   {"sve2-bitperm", 2, 4}, {"sve2-sha3", 2, 5},
    {"sve2-sm4", 2, 6},  {"altnzcv", 2, 7},    {"fptoint", 2, 8},      {"i8mm", 2, 13},
    {"f32mm", 2, 10},    {"f64mm", 2, 11},     {"bf16", 2, 14},        {"rand", 2, 16},
    {"bti", 2, 17},      {"mte", 2, 18},
};

// The features a stored string names with `sign`.
std::vector<std::string> with_sign(std::string_view features, char sign) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= features.size()) {
    size_t comma = features.find(',', pos);
    std::string_view f = features.substr(pos, comma == std::string_view::npos ? features.npos
                                                                              : comma - pos);
    if (f.size() > 1 && f.front() == sign)
      out.emplace_back(f.substr(1));
    if (comma == std::string_view::npos)
      break;
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}


#if defined(__x86_64__)
// A cpuid leaf as the C library read it when the process started, where it
// keeps that leaf (glibc 2.33 and later keep nine of the table's leaves for
// their own use); false for any other. The same registers a cpuid now would
// give, without the trap to the hypervisor each cpuid costs in a virtual
// machine (10-15 us).
bool libc_leaf(unsigned leaf, unsigned subleaf, unsigned r[4]) {
#ifdef KILN_LIBC_CPUID
  static constexpr struct {
    unsigned leaf, subleaf, index;
  } kKept[] = {
      {1, 0, CPUID_INDEX_1},
      {7, 0, CPUID_INDEX_7},
      {7, 1, CPUID_INDEX_7_ECX_1},
      {0xd, 1, CPUID_INDEX_D_ECX_1},
      {0x14, 0, CPUID_INDEX_14_ECX_0},
      {0x19, 0, CPUID_INDEX_19},
      {0x80000001, 0, CPUID_INDEX_80000001},
      {0x80000007, 0, CPUID_INDEX_80000007},
      {0x80000008, 0, CPUID_INDEX_80000008},
  };
  for (const auto& k : kKept)
    if (k.leaf == leaf && k.subleaf == subleaf) {
      const cpuid_feature* f = __x86_get_cpuid_feature_leaf(k.index);
      if (!f)
        return false;
      for (int i = 0; i < 4; ++i)
        r[i] = f->cpuid_array[i];
      return true;
    }
#else
  (void)leaf, (void)subleaf, (void)r;
#endif
  return false;
}

HostCpu read_host_cpu(bool libc_leaves) {
  HostCpu out;
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid(0, a, b, c, d);
  unsigned max_basic = a;
  unsigned vendor[3] = {b, d, c};
  unsigned max_ext = __get_cpuid_max(0x80000000, nullptr);
  // The table names about a hundred bits from a dozen leaves. Each is read
  // once, from the C library's copy where it keeps one: a first host load
  // then traps two or three times (leaves 0 and 0x80000000, and 0x80000021
  // where the CPU has it), not a dozen.
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
    if (leaf <= max && !(libc_leaves && libc_leaf(leaf, subleaf, l.r)))
      __cpuid_count(leaf, subleaf, l.r[0], l.r[1], l.r[2], l.r[3]);
    read.push_back(l);
    return read.back().r;
  };
  uint64_t xcr0 = 0;
  // xgetbv faults unless the OS set CR4.OSXSAVE: ask cpuid first.
  if (max_basic >= 1 && (regs(1, 0)[ecx] & (1u << 27))) {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t(hi) << 32) | lo;
  }
  for (const X86FeatureBit& f : x86_feature_bits()) {
    bool has = f.reg < 0;
    if (!has)
      has = (regs(f.leaf, f.subleaf)[f.reg] >> f.bit) & 1u;
    if (has && (xcr0 & f.xcr0) == f.xcr0)
      out.features.present.insert(f.name);
  }
  // The identity: the vendor, then every leaf read (leaf 1's EBX holds the
  // APIC id of whichever core ran it), sorted, and what the OS enables.
  regs(1, 0);
  regs(7, 0);
  regs(0x80000001, 0);
  std::sort(read.begin(), read.end(), [](const Leaf& x, const Leaf& y) {
    return x.leaf != y.leaf ? x.leaf < y.leaf : x.subleaf < y.subleaf;
  });
  // Written without a stream: the first stream in a process builds the
  // C++ locale, and a load that checks its image against this CPU is often
  // a process's first and only use of libkiln.
  std::string& id = out.identity;
  auto hex = [&](uint64_t v) {
    char buf[24];
    int n = std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    id.append(buf, size_t(n));
  };
  id += "x86 ";
  for (unsigned v : vendor) {
    hex(v);
    id += '.';
  }
  id.pop_back();
  for (const Leaf& l : read) {
    id += ' ';
    hex(l.leaf);
    id += '.';
    hex(l.subleaf);
    id += ':';
    for (int r = 0; r < 4; ++r) {
      hex(r == 1 && l.leaf == 1 ? 0u : l.r[r]);
      id += r == 3 ? "" : ".";
    }
  }
  id += " xcr0:";
  hex(xcr0);
  return out;
}
#elif defined(__aarch64__)
HostCpu read_host_cpu(bool) {
  HostCpu out;
  unsigned long caps[3] = {~0ul, getauxval(AT_HWCAP), getauxval(AT_HWCAP2)};
  for (const Arm64FeatureBit& f : arm64_feature_bits())
    if (f.hwcap == 0 || ((caps[f.hwcap] >> f.bit) & 1ul))
      out.features.present.insert(f.name);
  std::ostringstream id;
  id << "aarch64 hwcap " << std::hex << caps[1] << '.' << caps[2] << '\n';
  std::ifstream info("/proc/cpuinfo");
  static const char* const keys[] = {"CPU implementer", "CPU architecture", "CPU variant",
                                     "CPU part", "CPU revision", "Features"};
  for (std::string line; std::getline(info, line);) {
    if (line.empty())
      break; // the first processor says it
    std::string key = line.substr(0, line.find(':'));
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t'))
      key.pop_back();
    if (std::find(std::begin(keys), std::end(keys), key) != std::end(keys))
      id << line << '\n';
  }
  out.identity = id.str();
  return out;
}
#else
#error "unsupported host architecture"
#endif

} // namespace

std::span<const X86FeatureBit> x86_feature_bits() { return kX86; }

std::span<const Arm64FeatureBit> arm64_feature_bits() { return kArm64; }

bool known_cpu_feature(std::string_view name) {
  // The table's names, sorted once: a load checks a hundred names against
  // a hundred entries, which a scan made ten thousand comparisons.
  static const std::vector<std::string_view> sorted = [] {
    std::vector<std::string_view> v;
    v.reserve(std::size(kX86) + std::size(kArm64));
#if defined(__x86_64__)
    for (const X86FeatureBit& f : kX86)
      v.push_back(f.name);
#elif defined(__aarch64__)
    for (const Arm64FeatureBit& f : kArm64)
      v.push_back(f.name);
#endif
    std::sort(v.begin(), v.end());
    return v;
  }();
  return std::binary_search(sorted.begin(), sorted.end(), name);
}

std::vector<std::string> required_cpu_features(std::string_view features) {
  return with_sign(features, '+');
}

CpuGap compare_cpu_features(std::string_view features, const CpuFeatures& cpu) {
  CpuGap gap;
  // The "+name" entries in order, each once (as required_cpu_features gives
  // them), without building that list: most are present and known.
  size_t pos = 0;
  while (pos <= features.size()) {
    size_t comma = features.find(',', pos);
    std::string_view f = features.substr(pos, comma == std::string_view::npos ? features.npos
                                                                              : comma - pos);
    if (f.size() > 1 && f.front() == '+') {
      std::string name(f.substr(1));
      if (!known_cpu_feature(name))
        gap.unknown.push_back(std::move(name));
      else if (!cpu.present.count(name))
        gap.missing.push_back(std::move(name));
    }
    if (comma == std::string_view::npos)
      break;
    pos = comma + 1;
  }
  for (std::vector<std::string>* v : {&gap.unknown, &gap.missing}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return gap;
}

bool same_cpu_features(std::string_view features, const CpuFeatures& cpu) {
  for (const std::string& f : with_sign(features, '+'))
    if (known_cpu_feature(f) && !cpu.present.count(f))
      return false;
  for (const std::string& f : with_sign(features, '-'))
    if (known_cpu_feature(f) && cpu.present.count(f))
      return false;
  return true;
}

HostCpu read_host_cpu_by_cpuid() { return read_host_cpu(false); }

const HostCpu& this_host_cpu() {
  static const HostCpu cpu = read_host_cpu(true); // the CPU does not change
  return cpu;
}

} // namespace kiln::core
