// What a canonical target spec says by itself.
#include "core/target.h"

#include <algorithm>
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

std::string canonical_amd_spec(std::string_view gcn_arch_name) {
  std::string_view rest = gcn_arch_name;
  size_t colon = rest.find(':');
  std::string spec(rest.substr(0, colon));
  std::vector<std::string_view> features;
  while (colon != std::string_view::npos) {
    rest = rest.substr(colon + 1);
    colon = rest.find(':');
    if (std::string_view f = rest.substr(0, colon); !f.empty())
      features.push_back(f);
  }
  // By name without the trailing +/-, as codegen's std::map orders them.
  auto name = [](std::string_view f) { return f.substr(0, f.size() - 1); };
  std::stable_sort(features.begin(), features.end(),
                   [&](std::string_view a, std::string_view b) { return name(a) < name(b); });
  for (std::string_view f : features)
    (spec += ':') += f;
  return spec;
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

} // namespace kiln::core
