// Images, in one place: a closure becomes one loadable binary for one device
// (a host shared object, a cubin, an HSACO). The path is always the same:
// the image storage has (stored here, else fetched from the remote), else
// the closure's job artifacts linked (lld through libkiln-link, nvJitLink),
// checked, stored and published. The driver, the memo, the loader and the
// tools all come here; the linkers stay behind it.
#pragma once

#include "core/data_model.h"
#include "link/nvjitlink.h"
#include "storage/records.h"
#include "storage/storage.h"

#include <kiln/result.hpp>

#include <functional>
#include <string>

namespace kiln::image {

/// The fingerprint of the linker that makes images for this target here
/// (part of the image key); unavailable if that linker is not installed.
Result<std::string> linker_fingerprint(const std::string& target);

/// Links the closure's artifacts (host objects via lld, cubins or PTX via
/// nvJitLink, AMDGPU bitcode via IR link + codegen + lld) and checks the
/// result. `threads`: how many threads the link may use (AMDGPU code
/// generation of a module of many kernels); the bytes do not depend on it.
Result<std::string> link_closure(storage::Records& store, const core::ClosureRecord& closure,
                                 unsigned threads = 1);

/// How an NVIDIA image is linked: link::nvjitlink_cubin's contract (the
/// inputs, the arch, whether the CUDA device runtime is linked), run
/// somewhere else, such as a worker process (codegen::nvlink_isolated).
using NvLinker = std::function<Result<std::string>(const std::vector<link::NvInput>& inputs,
                                                   const std::string& arch,
                                                   bool device_runtime)>;

/// link_closure, with NVIDIA images linked by `nv` where given (else in
/// this process). A precompile gives `nv`; only then is a lone PTX job's
/// image made by the ptxas program as a whole program, without nvJitLink
/// (link/ptxas_program.h), so that a loading application never starts a
/// program.
Result<std::string> link_closure_with(storage::Records& store, const core::ClosureRecord& closure,
                                      unsigned threads, const NvLinker* nv);

/// The whole "get me the image bytes" path: from storage (the local cache,
/// else the remote, if any), else linked, stored and published. A damaged
/// stored image counts as absent. `linked`, if given, says whether the image
/// had to be linked. `threads`: link_closure's. `nv`: link_closure_with's.
Result<std::string> fetch_or_link(storage::Storage& storage, const core::ClosureRecord& closure,
                                  bool* linked = nullptr, unsigned threads = 1,
                                  const NvLinker* nv = nullptr);

/// How a device makes an image the usual linkers cannot: the CUDA driver's
/// JIT from PTX, say. `make` produces the bytes; `fingerprint` names the
/// maker for the image key.
struct Maker {
  std::string arch; ///< the image key's arch column ("sm_90")
  std::function<Result<std::string>()> fingerprint;
  std::function<Result<std::string>(const core::ClosureRecord&)> make;
};

/// Same path with another maker, local only: stored under `maker.arch`,
/// else made, checked and stored (not published: such an image is this
/// device's).
Result<std::string> fetch_or_make(storage::Records& store, const core::ClosureRecord& closure,
                                  const Maker& maker, bool* linked = nullptr);

} // namespace kiln::image
