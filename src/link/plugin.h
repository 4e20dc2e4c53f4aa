// The lld side of linking, behind libkiln-link (lld, and so LLVM), which is
// dlopen'd the first time an image must be relinked: a process that only
// loads cached images never maps it. Its C boundary is link_abi.h.
#pragma once

#include <kiln/result.hpp>

#include <string>
#include <vector>

namespace kiln::link {

/// Links a closure's host objects into one shared object.
Result<std::string> link_host_image(const std::vector<std::string>& objects,
                                    const std::vector<std::string>& names);
/// Links a closure's AMDGPU bitcode into an HSACO (IR link, codegen, lld),
/// compiling a module of many kernels in parts on up to `threads` threads
/// (the same bytes at any count).
Result<std::string> link_amdgpu_image(const std::vector<std::string>& bitcode,
                                      const std::vector<std::string>& names,
                                      const std::string& cpu, const std::string& features,
                                      unsigned threads = 1);
/// The fingerprint of the lld libkiln-link is built with, without loading it.
const char* lld_fingerprint();

} // namespace kiln::link
