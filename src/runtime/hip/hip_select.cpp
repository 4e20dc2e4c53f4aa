// AMD target selection: the runtime's code-object compatibility rules
// (processor and xnack/sramecc settings), and the present device they are
// asked about.
#include "runtime/hip/hip_select.h"

#include "runtime/hip/hip_status.h"

#include <cstring>

namespace kiln::runtime {

namespace {

// hipDeviceProp_t is a few KiB; the buffer is oversized so that a newer
// ROCm's larger struct cannot overrun it.
constexpr size_t kPropsSize = 16384;

Result<HipDevice> open_hip_device() {
  const Result<HipSymbols>& table = hip_symbols();
  if (!table)
    return table.error();
  const HipSymbols& hip = *table;
  HipDevice d;
  d.hip = &hip;
  int count = 0, rc = hip.hipInit(0);
  if (rc == 0)
    rc = hip.hipGetDeviceCount(&count);
  if (rc != 0 || count == 0)
    return make_error(Code::unavailable, "no AMD GPU visible to HIP" +
                                             (rc ? ": " + hip_describe(hip, rc) : std::string()));
  std::vector<char> props(kPropsSize, '\0');
  if ((rc = hip.hipGetDevicePropertiesR0600(props.data(), 0)) != 0)
    return make_error(Code::unavailable,
                      "cannot read the properties of AMD GPU 0: " + hip_describe(hip, rc));
  if ((d.gcn_arch_name = find_gcn_arch(props)).empty())
    return make_error(Code::unavailable, "HIP reports no architecture for AMD GPU 0");
  return d;
}

} // namespace

std::optional<AmdArch> parse_amd_arch(const std::string& target) {
  AmdArch a;
  size_t colon = target.find(':');
  a.processor = target.substr(0, colon);
  if (a.processor.size() < 4 || a.processor.rfind("gfx", 0) != 0)
    return std::nullopt;
  while (colon != std::string::npos) {
    size_t next = target.find(':', colon + 1);
    std::string f = target.substr(colon + 1, next == std::string::npos ? next : next - colon - 1);
    if (f.size() < 2 || (f.back() != '+' && f.back() != '-'))
      return std::nullopt;
    a.features.emplace_back(f.substr(0, f.size() - 1), f.back());
    colon = next;
  }
  return a;
}

std::string hip_target_spec(const std::string& gcn_arch_name) {
  // gcnArchName lists features as the driver likes ("gfx942:sramecc+:xnack-");
  // a Kiln target spec names xnack before sramecc.
  std::string cpu = gcn_arch_name.substr(0, gcn_arch_name.find(':'));
  std::string xnack, sramecc;
  for (size_t at = gcn_arch_name.find(':'); at != std::string::npos;) {
    size_t next = gcn_arch_name.find(':', at + 1);
    std::string feature =
        gcn_arch_name.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    if (feature.rfind("xnack", 0) == 0)
      xnack = ":" + feature;
    else if (feature.rfind("sramecc", 0) == 0)
      sramecc = ":" + feature;
    at = next;
  }
  return cpu + xnack + sramecc;
}

// hipDeviceProp_t's layout changes between ROCm releases and Kiln does not
// build against HIP headers, so the arch name is found by content.
std::string find_gcn_arch(const std::vector<char>& props) {
  for (size_t i = 0; i + 4 < props.size(); ++i) {
    if (std::memcmp(&props[i], "gfx", 3) != 0 || props[i + 3] < '0' || props[i + 3] > '9')
      continue;
    if (i > 0 && props[i - 1] != '\0')
      continue;
    size_t end = i;
    while (end < props.size() && props[end] != '\0')
      ++end;
    if (end < props.size())
      return std::string(&props[i], end - i);
  }
  return {};
}

bool code_object_runs_on(const std::string& target, const std::string& device) {
  auto t = parse_amd_arch(target);
  auto d = parse_amd_arch(device);
  if (!t || !d || t->processor != d->processor)
    return false;
  for (const auto& [name, setting] : t->features) {
    bool same = false;
    for (const auto& [dname, dsetting] : d->features)
      same = same || (dname == name && dsetting == setting);
    if (!same)
      return false;
  }
  return true;
}

std::string select_amd_target(const std::vector<std::string>& have, const std::string& device) {
  std::string best;
  int best_rank = -1;
  for (const std::string& t : have) {
    if (!code_object_runs_on(t, device))
      continue;
    int rank = int(parse_amd_arch(t)->features.size());
    if (rank > best_rank) {
      best_rank = rank;
      best = t;
    }
  }
  return best;
}

const Result<HipDevice>& hip_device() {
  static const Result<HipDevice> device = open_hip_device();
  return device;
}

Result<std::string> choose_hip_target(const std::vector<std::string>& have) {
  const Result<HipDevice>& d = hip_device();
  if (!d)
    return std::string();
  return select_amd_target(have, d->arch());
}

Result<std::string> hip_device_arch() {
  const Result<HipDevice>& d = hip_device();
  if (!d)
    return d.error();
  return d->arch();
}

} // namespace kiln::runtime
