// Images for every kind of target: which linker makes them (its fingerprint
// is part of the image key), linking a closure's job artifacts into one
// image, and checking an image before anything loads it.
#pragma once

#include "cache/store.h"

#include <kiln/result.hpp>

#include <string>

namespace kiln::remote {
class Tier;
}

namespace kiln::runtime {

enum class DeviceKind { host, nvidia, amd };

/// From a canonical target spec: "host", "sm_*", "gfx*". No LLVM needed.
DeviceKind device_kind(const std::string& target);

/// The image key's arch column for a target: the host's machine, or the
/// GPU target spec itself.
std::string image_arch(const std::string& target);

/// The fingerprint of the linker that makes images for this target here;
/// unavailable if that linker is not installed.
Result<std::string> linker_fingerprint(const std::string& target);

/// Links the closure's artifacts (host objects via lld, cubins or PTX via
/// nvJitLink, AMDGPU bitcode via IR link + codegen + lld) and checks the
/// result.
Result<std::string> link_closure(cache::Store& store, const cache::ClosureRecord& closure);

/// Checks an image before use: ELF for the right machine, and every job of
/// the closure defined in it (GPU images: no undefined functions either).
Status check_image(const std::string& bytes, const cache::ClosureRecord& closure);

/// The whole "get me the image bytes" path: from the cache, else from the
/// remote tier (if any), else linked, stored and published. A damaged stored
/// image counts as absent. `linked`, if given, says whether the image had
/// to be linked.
Result<std::string> fetch_or_link_image(cache::Store& store, const cache::ClosureRecord& closure,
                                        bool* linked = nullptr, remote::Tier* remote = nullptr);

/// NVIDIA code whose cubin does not run on the present device: the image the
/// driver's JIT made from the closure's PTX, from the cache or made now and
/// stored under the device's arch.
Result<std::string> fetch_or_jit_image(cache::Store& store, const cache::ClosureRecord& closure,
                                       bool* linked = nullptr);

} // namespace kiln::runtime
