// AMD target selection: the runtime's code-object compatibility rules
// (processor and xnack/sramecc settings), and the present device they are
// asked about.
#include "runtime/hip/hip_select.h"

#include "runtime/hip/hip_status.h"

#include <vector>

namespace kiln::runtime {

namespace {

// hipDeviceProp_t is 792 bytes in ROCm 5 and 1472 in ROCm 6 and 7; the
// buffer is zero-filled and oversized so that a newer runtime's larger
// struct cannot overrun it.
constexpr size_t kPropsSize = 16384;

} // namespace

HipPropsFormat hip_props_format(HipPropsLayout layout) {
  // offsetof(gcnArchName) and sizeof in ROCm 5.2's hip/hip_runtime_api.h
  // (hipDeviceProp_t, also ROCm 6's hipDeviceProp_tR0000) and in ROCm 6's
  // and 7's (hipDeviceProp_tR0600).
  switch (layout) {
  case HipPropsLayout::r0000:
    return {396, 792, "hipGetDeviceProperties"};
  case HipPropsLayout::r0600:
    return {1160, 1472, "hipGetDevicePropertiesR0600"};
  }
  return {};
}

std::string hip_runtime_text(int version, const std::string& library) {
  std::string v = version > 0 ? std::to_string(version / 10000000) + "." +
                                    std::to_string(version / 100000 % 100) + "." +
                                    std::to_string(version % 100000)
                              : "of unknown version";
  return "HIP runtime " + v + " (" + library + ")";
}

Result<std::string> read_gcn_arch(std::span<const char> props, HipPropsLayout layout,
                                  const std::string& runtime) {
  constexpr size_t kNameSize = 256; // char gcnArchName[256]
  HipPropsFormat f = hip_props_format(layout);
  std::string where = runtime + ": the gcnArchName " + f.call + " filled in at byte " +
                      std::to_string(f.gcn_arch_name);
  if (props.size() < f.size) // which holds gcnArchName whole
    return make_error(Code::internal, where + ": the " + std::to_string(props.size()) +
                                          "-byte buffer is smaller than the " +
                                          std::to_string(f.size) + "-byte struct");
  std::span<const char> field = props.subspan(f.gcn_arch_name, kNameSize);
  size_t end = 0;
  while (end < field.size() && field[end] != '\0')
    ++end;
  if (end == field.size())
    return make_error(Code::unavailable,
                      where + " is not NUL-terminated; this runtime's struct layout is unknown");
  std::string name(field.data(), end);
  bool plain = true;
  for (char c : name)
    plain = plain &&
            ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '+' || c == '-');
  if (!plain || name.size() < 4 || name[3] < '0' || name[3] > '9' || !core::parse_amd_arch(name)) {
    std::string shown;
    for (char c : name.substr(0, 48))
      shown += c >= ' ' && c <= '~' ? c : '?';
    return make_error(Code::unavailable, where + " is \"" + shown +
                                             "\", not an AMD architecture name; this "
                                             "runtime's struct layout is unknown");
  }
  return name;
}

Result<HipDevice> open_hip_device(const HipSymbols& hip) {
  HipDevice d;
  d.hip = &hip;
  if (hip.hipRuntimeGetVersion && hip.hipRuntimeGetVersion(&d.runtime_version) != 0)
    d.runtime_version = 0;
  std::string runtime = hip_runtime_text(d.runtime_version, hip.library);
  if (!hip.get_device_properties)
    return make_error(Code::internal, runtime + ": no device-properties call was chosen");
  int count = 0, rc = hip.hipInit(0);
  if (rc == 0)
    rc = hip.hipGetDeviceCount(&count);
  if (rc != 0 || count == 0)
    return make_error(Code::unavailable, "no AMD GPU visible to the " + runtime +
                                             (rc ? ": " + hip_describe(hip, rc) : std::string()));
  std::vector<char> props(kPropsSize, '\0');
  if ((rc = hip.get_device_properties(props.data(), 0)) != 0)
    return make_error(Code::unavailable, "cannot read the properties of AMD GPU 0 (" +
                                             std::string(hip_props_format(hip.props_layout).call) +
                                             " of the " + runtime + "): " + hip_describe(hip, rc));
  KILN_TRY_ASSIGN(d.gcn_arch_name, read_gcn_arch(props, hip.props_layout, runtime));
  return d;
}

bool code_object_runs_on(const std::string& target, const std::string& device) {
  auto t = core::parse_amd_arch(target);
  auto d = core::parse_amd_arch(device);
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
    int rank = int(core::parse_amd_arch(t)->features.size());
    if (rank > best_rank) {
      best_rank = rank;
      best = t;
    }
  }
  return best;
}

const Result<HipDevice>& hip_device() {
  static const Result<HipDevice> device = [] {
    const Result<HipSymbols>& table = hip_symbols();
    return table ? open_hip_device(*table) : Result<HipDevice>(table.error());
  }();
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
