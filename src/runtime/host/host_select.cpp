// Host target selection: host code is stored under the spec "host" and runs
// on the machine that loads it, so there is nothing to rank.
#include "runtime/host/host_select.h"

#include <algorithm>

namespace kiln::runtime {

namespace {

constexpr const char* kHostTarget = "host";

} // namespace

Result<std::string> host_device_target() { return std::string(kHostTarget); }

Result<std::string> choose_host_target(const std::vector<std::string>& have) {
  if (std::find(have.begin(), have.end(), kHostTarget) != have.end())
    return std::string(kHostTarget);
  return std::string();
}

} // namespace kiln::runtime
