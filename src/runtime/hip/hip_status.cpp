// hipError_t → text. Unlike CUDA's, HIP's error-text functions return the
// text and answer an unknown code with "hipErrorUnknown"; an absent
// function leaves the number alone.
#include "runtime/hip/hip_status.h"

namespace kiln::runtime {

std::string hip_status_text(int rc, const char* name, const char* text) {
  std::string out = "HIP error " + std::to_string(rc);
  if (name && text)
    out += std::string(" (") + name + ": " + text + ")";
  else if (name || text)
    out += std::string(" (") + (name ? name : text) + ")";
  return out;
}

std::string hip_describe(const HipSymbols& hip, int rc) {
  return hip_status_text(rc, hip.hipGetErrorName ? hip.hipGetErrorName(rc) : nullptr,
                         hip.hipGetErrorString ? hip.hipGetErrorString(rc) : nullptr);
}

} // namespace kiln::runtime
