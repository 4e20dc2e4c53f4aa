// Host images: shared objects for this machine, loaded from memory with the
// C library's dynamic loader; lookups give function addresses.
//
// Unlike cuda/ and hip/, host/ has no <dev>_symbols.def or dynamic-symbols
// table: its "driver" is the C library's own dynamic loader (dlopen, dlsym,
// memfd_create), which every process already has and Kiln links directly.
// There is no vendor library that may be missing, so nothing to resolve at
// first use and no dlopen fault point; a host load fails only on the image.
#pragma once

#include "core/records.h"
#include "runtime/module.h"

#include <kiln/result.hpp>

#include <memory>
#include <string>

namespace kiln::runtime {

/// Checks that `bytes` is a 64-bit little-endian ELF shared object for this
/// machine (corrupt otherwise: the cache is not trusted), loads it from an
/// anonymous memory file and fills `symbols` with every member's address
/// by entry name.
Result<std::unique_ptr<LoadedModule>> load_host_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols);

} // namespace kiln::runtime
