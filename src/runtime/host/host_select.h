// The host as a target: the one spec whose code this process always runs.
// Mirrors cuda/cuda_select.h and hip/hip_select.h, minus any device query
// that can fail.
#pragma once

#include <kiln/result.hpp>

#include <string>
#include <vector>

namespace kiln::runtime {

/// The host's target spec: "host" (the machine's own CPU, whatever it is).
Result<std::string> host_device_target();

/// Of the host targets a cache has for a root ("host", "host:CPU"), the one
/// to load: "host" when present, else the portable one listed first; empty
/// when there is none. The loader passes only those this CPU runs, best
/// first (see choose_host_build).
Result<std::string> choose_host_target(const std::vector<std::string>& have);

/// A host build of a root: its target spec and its root job's features.
struct HostBuild {
  std::string target;
  std::string features;
};

/// Of a root's host builds, the best one this CPU runs: plain "host" when
/// it was built for this CPU's features, else the portable one needing the
/// most features, else plain "host" built on a lesser CPU; empty when none
/// runs here.
std::string choose_host_build(const std::vector<HostBuild>& builds);

} // namespace kiln::runtime
