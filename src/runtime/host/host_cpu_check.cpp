// This CPU's features (core/host_cpu.h reads them), and the refusal of host
// code that needs more.
#include "runtime/host/host_cpu_check.h"

#include "core/target.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

} // namespace

const core::CpuFeatures& host_cpu_features() { return core::this_host_cpu().features; }

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
