// The bridge: what libkiln-compiler calls in libkiln beyond the public API,
// as one table of function pointers that libkiln hands over through one
// symbol, kiln_private_bridge (src/libkiln.map.in). libkiln exports no
// internal symbol; libkiln-compiler defines each listed function
// (bridge/forward.cpp) as a call through the table, so its code calls
// them as before. The symbol is versioned by release: a libkiln-compiler of
// another release fails to load, naming the version, rather than calling
// into code it was not built with.
//
// Listed are the functions whose state is libkiln's: the cache's objects
// (made by libkiln, so their destructors are virtual), the runtime's images
// and last error, the memo and the fault plan. The stateless support and
// core layers are not: libkiln-compiler carries its own private copy.
#pragma once

#include "image/image.h"
#include "link/nvjitlink.h"
#include "memo/compiler_plugin.h"
#include "memo/library.h"
#include "memo/memo.h"
#include "memo/record.h"
#include "runtime/cuda/cuda_select.h"
#include "runtime/handles.h"
#include "runtime/hip/hip_select.h"
#include "runtime/loader.h"
#include "storage/single_flight.h"
#include "storage/storage.h"
#include "support/fault.h"

#include <cstddef>

namespace kiln::bridge {

struct Bridge {
  std::size_t size; ///< sizeof(Bridge) in libkiln: a mismatch is refused
#define KILN_BRIDGE_FREE(field, ret, name, params, args) ret(*field) params;
#define KILN_BRIDGE_MEMBER(field, ret, cls, method, params, args, quals)                       \
  ret (cls::*field) params quals;
#include "bridge/calls.inc"
#undef KILN_BRIDGE_FREE
#undef KILN_BRIDGE_MEMBER
  void (::kiln_cache::*cache_flush_usage)();
};

} // namespace kiln::bridge

extern "C" {
/// libkiln's table (bridge/table.cpp).
const kiln::bridge::Bridge* kiln_private_bridge(void);
}
