// What a canonical target spec says by itself.
#include "core/target.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace kiln::core {

TargetKind target_kind(std::string_view spec) {
  if (spec.substr(0, 3) == "sm_")
    return TargetKind::nvptx;
  if (spec.substr(0, 3) == "gfx")
    return TargetKind::amdgpu;
  return TargetKind::host;
}

std::string_view host_spec_cpu(std::string_view spec) {
  return spec.substr(0, 5) == "host:" ? spec.substr(5) : std::string_view();
}

bool is_host_spec(std::string_view spec) { return spec == "host" || spec.substr(0, 5) == "host:"; }

Result<AmdArch> parse_amd_arch(std::string_view spec) {
  auto bad = [](const std::string& why) { return make_error(Code::invalid_argument, why); };
  size_t colon = spec.find(':');
  AmdArch a;
  a.processor = std::string(spec.substr(0, colon));
  if (a.processor.size() < 4 || a.processor.rfind("gfx", 0) != 0)
    return bad("'" + a.processor + "' is not an AMD processor name (gfxN...)");
  while (colon != std::string_view::npos) {
    size_t next = spec.find(':', colon + 1);
    std::string f(spec.substr(colon + 1, next == std::string_view::npos ? next : next - colon - 1));
    if (f.size() < 2 || (f.back() != '+' && f.back() != '-'))
      return bad("feature '" + f + "' must end in + or -");
    a.features.emplace_back(f.substr(0, f.size() - 1), f.back());
    colon = next;
  }
  return a;
}

std::string AmdArch::spec() const {
  auto sorted = features;
  // By name: stable, so a name given twice keeps its order.
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::string out = processor;
  for (const auto& [name, sign] : sorted)
    out += ":" + name + sign;
  return out;
}

std::string canonical_amd_spec(std::string_view gcn_arch_name) {
  // Empty fields ("gfx942::xnack-:") are dropped, as a runtime may pad.
  std::string name;
  for (size_t at = 0; at <= gcn_arch_name.size();) {
    size_t colon = std::min(gcn_arch_name.find(':', at), gcn_arch_name.size());
    if (colon > at || at == 0)
      name += (at == 0 ? "" : ":") + std::string(gcn_arch_name.substr(at, colon - at));
    at = colon + 1;
  }
  auto a = parse_amd_arch(name);
  return a ? a->spec() : name;
}

const char* target_kind_name(TargetKind kind) {
  switch (kind) {
  case TargetKind::host:
    return "host";
  case TargetKind::nvptx:
    return "nvidia";
  case TargetKind::amdgpu:
    return "amd";
  }
  return "unknown";
}

const char* host_arch() {
#if defined(__x86_64__)
  return "x86_64-linux";
#else
  return "aarch64-linux";
#endif
}

std::string image_arch(std::string_view spec) {
  if (target_kind(spec) != TargetKind::host)
    return std::string(spec);
  std::string_view cpu = host_spec_cpu(spec);
  return cpu.empty() ? std::string(host_arch()) : std::string(host_arch()) + ":" + std::string(cpu);
}

const char* image_format(TargetKind kind) {
  switch (kind) {
  case TargetKind::host:
    return "so";
  case TargetKind::nvptx:
    return "cubin";
  case TargetKind::amdgpu:
    return "hsaco";
  }
  return "";
}

namespace {

constexpr NvTarget kNvTargets[] = {
    {"sm_75", 78},   {"sm_80", 78},   {"sm_86", 78},   {"sm_87", 78},   {"sm_88", 90},
    {"sm_89", 78},   {"sm_90", 78},   {"sm_90a", 80},  {"sm_100", 86},  {"sm_100a", 86},
    {"sm_100f", 88}, {"sm_101", 86},  {"sm_101a", 86}, {"sm_101f", 88}, {"sm_103", 88},
    {"sm_103a", 88}, {"sm_103f", 88}, {"sm_110", 90},  {"sm_110a", 90}, {"sm_110f", 90},
    {"sm_120", 87},  {"sm_120a", 87}, {"sm_120f", 88}, {"sm_121", 88},  {"sm_121a", 88},
    {"sm_121f", 88},
};

} // namespace

std::optional<NvArch> parse_nv_arch(std::string_view spec) {
  if (spec.substr(0, 3) != "sm_")
    return std::nullopt;
  std::string_view rest = spec.substr(3);
  NvArch a;
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    a.suffix = rest.back();
    rest.remove_suffix(1);
  }
  if (rest.size() < 2 || rest.size() > 3)
    return std::nullopt;
  for (char c : rest)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
  a.minor = rest.back() - '0';
  a.major = 0;
  for (char c : rest.substr(0, rest.size() - 1))
    a.major = a.major * 10 + (c - '0');
  return a;
}

std::span<const NvTarget> nvidia_targets() { return kNvTargets; }

std::string nvidia_target_list() {
  // Each architecture once, with its suffixed forms: one ('a') listed in
  // full ("sm_90, sm_90a"), several folded ("sm_100[a|f]").
  std::string out;
  for (size_t i = 0; i < std::size(kNvTargets);) {
    std::string base = kNvTargets[i].spec;
    std::string suffixes;
    size_t j = i + 1;
    for (; j < std::size(kNvTargets); ++j) {
      std::string s = kNvTargets[j].spec;
      if (s.size() != base.size() + 1 || s.compare(0, base.size(), base) != 0)
        break;
      suffixes += s.back();
    }
    out += out.empty() ? "" : ", ";
    if (suffixes.size() == 1)
      out += base + ", " + base + suffixes;
    else if (!suffixes.empty()) {
      out += base + "[";
      for (size_t k = 0; k < suffixes.size(); ++k)
        out += (k ? "|" : "") + std::string(1, suffixes[k]);
      out += "]";
    }
    else
      out += base;
    i = j;
  }
  return out;
}

} // namespace kiln::core
