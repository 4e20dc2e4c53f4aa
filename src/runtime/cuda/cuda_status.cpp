// CUresult → text. The driver names only the codes it knows and leaves the
// out-pointer unset otherwise, so the number is always kept.
#include "runtime/cuda/cuda_status.h"

namespace kiln::runtime {

std::string cuda_status_text(int rc, const char* name, const char* text) {
  std::string out = "CUDA error " + std::to_string(rc);
  if (name && text)
    out += std::string(" (") + name + ": " + text + ")";
  else if (name || text)
    out += std::string(" (") + (name ? name : text) + ")";
  return out;
}

std::string cuda_describe(const CudaSymbols& cu, int rc) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cu.cuGetErrorName && cu.cuGetErrorName(rc, &name) != 0)
    name = nullptr;
  if (cu.cuGetErrorString && cu.cuGetErrorString(rc, &text) != 0)
    text = nullptr;
  return cuda_status_text(rc, name, text);
}

} // namespace kiln::runtime
