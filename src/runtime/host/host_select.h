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

/// "host" when the cache has a host build of the root; empty otherwise.
Result<std::string> choose_host_target(const std::vector<std::string>& have);

} // namespace kiln::runtime
