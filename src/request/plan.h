// The plan's run, for the request path (request/request.h): a Plan's
// insides stay in plan.cpp.
#pragma once

#include "storage/storage.h"

#include <kiln/compiler.hpp>

namespace kiln::driver {

/// The plan's jobs found or compiled (single-flight), its closures, names,
/// libraries and images recorded, over `cache` (its remote tier included).
Result<CompileReport> run_plan(Plan& plan, storage::Storage& cache);

/// The request the plan was made from.
const CompileRequest& request_of(Plan& plan);

} // namespace kiln::driver
