// The driver's calls for the compiler's other entry points (the C API, the
// C++ Cache overload): a compile over a cache the caller already has open.
// kiln::compile(request, path) opens the cache itself and comes here too.
#pragma once

#include "storage/records.h"

#include <kiln/compiler.hpp>

namespace kiln::driver {

/// kiln::compile over the caller's open cache: the request memo, else the
/// plan run against `store` (with the request's remote tier, if any), then
/// the request is memoised. `store` is not closed; a store opened by a
/// loading process (Records::defer_checkpoint) is a writer's from here on.
Result<CompileReport> compile_in(const CompileRequest& request, storage::Records& store);

/// Plan::run over the caller's open cache, without the request memo.
Result<CompileReport> run_in(Plan& plan, storage::Records& store);

} // namespace kiln::driver
