// Host target selection: a root may be built for this machine's CPU ("host")
// and for portable CPUs ("host:x86-64-v3"); the best one this CPU runs wins.
#include "runtime/host/host_select.h"

#include "core/host_cpu.h"
#include "core/target.h"
#include "runtime/host/host_cpu_check.h"

#include <algorithm>

namespace kiln::runtime {

namespace {

constexpr const char* kHostTarget = "host";

} // namespace

Result<std::string> host_device_target() { return std::string(kHostTarget); }

Result<std::string> choose_host_target(const std::vector<std::string>& have) {
  if (std::find(have.begin(), have.end(), kHostTarget) != have.end())
    return std::string(kHostTarget);
  for (const std::string& t : have)
    if (core::is_host_spec(t))
      return t;
  return std::string();
}

std::string choose_host_build(const std::vector<HostBuild>& builds) {
  const HostBuild* best = nullptr;
  size_t best_count = 0;
  bool plain_runs = false;
  for (const HostBuild& b : builds) {
    if (!core::is_host_spec(b.target))
      continue;
    core::JobRecord job;
    job.target = b.target;
    job.features = b.features;
    if (!host_cpu_gap(job).runs())
      continue;
    if (b.target == kHostTarget) {
      if (core::same_cpu_features(b.features, host_cpu_features()))
        return b.target;
      plain_runs = true; // built on another CPU whose features this one has
      continue;
    }
    size_t count = core::required_cpu_features(b.features).size();
    if (!best || count > best_count || (count == best_count && b.target < best->target)) {
      best = &b;
      best_count = count;
    }
  }
  if (best)
    return best->target;
  return plain_runs ? std::string(kHostTarget) : std::string();
}

} // namespace kiln::runtime
