// Links a closure's NVIDIA pieces (relocatable cubins, or PTX) into one
// cubin with nvJitLink, dlopen'd: no GPU, no driver, no link-time CUDA
// dependency. Free of LLVM, so the loader can relink GPU images itself.
#pragma once

#include <kiln/result.hpp>

#include <string>
#include <vector>

namespace kiln::link {

struct NvInput {
  std::string name;  ///< for the error log: the job key
  std::string bytes;
  bool ptx = false;  ///< PTX text rather than a relocatable cubin
};

/// "nvJitLink 13.0", or unavailable if the library cannot be loaded.
Result<std::string> nvjitlink_fingerprint();

/// Links the inputs for `arch` ("sm_90"); nvJitLink's error log is in the
/// error message.
Result<std::string> nvjitlink_cubin(const std::vector<NvInput>& inputs, const std::string& arch);

} // namespace kiln::link
