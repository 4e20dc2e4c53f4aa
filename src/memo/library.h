// Kernel libraries: the roots a precompile request names for one target,
// recorded under one name and linked as one image (a cubin, HSACO or shared
// object holding all their kernels). The driver records them after a run,
// the memo after a replay: both come here.
#pragma once

#include "core/data_model.h"
#include "storage/storage.h"

#include <kiln/request.hpp>

#include <string>
#include <utility>
#include <vector>

namespace kiln::memo {

/// One root of a library: its name and its closure (members' entries
/// filled, as Store::get_closure gives it).
using LibraryRoot = std::pair<std::string, core::ClosureRecord>;

/// Records library `name` for `target` over `roots` (core::library_closure;
/// the same roots give the same closure, so its image is relinked only when
/// one of their closures changes) and, with `link`, checks or links its
/// image. Every failure is in the report's error or note, never thrown.
LibraryReport record_library(storage::Storage& storage, const std::string& name,
                             const std::string& target, const std::vector<LibraryRoot>& roots,
                             bool link);

/// record_library for each target of a request's roots (`closures`
/// parallel to `roots`): a target where a root has no closure (it failed,
/// or is left to other shards) gets a library report with that error.
std::vector<LibraryReport> record_libraries(storage::Storage& storage, const std::string& name,
                                            const std::vector<core::ClosureRecord>& closures,
                                            const std::vector<RootReport>& roots, bool link);

} // namespace kiln::memo
