// What every path that answers a precompile request records for a root:
// the driver after a run, a memo's answer, and a compile-or-load that found
// its closure cached all come here, so that a root's name, unit and image
// outcome read the same whichever path answered.
#pragma once

#include "storage/records.h"
#include "support/hash.h"

#include <kiln/request.hpp>

#include <string>

namespace kiln::memo {

/// A root's image as its report gives it: linked (`image`), left to the
/// loader where this machine has no linker (a `note`), or failed (an
/// `error` naming the root).
void report_image(RootReport& rr, const Status& image);

/// Points the root's name (rr.name for rr.target) at `closure`, recording
/// `unit` (the request's input file names), and reports it: rr.unit always,
/// and a move from another closure (previous_closure, previous_unit). A name
/// that already points there from the same unit is not written again, nor on
/// a read-only cache one that points there from another. A closure gone since
/// it was found (another process's gc) is `not_found`; a read-only cache is
/// `unavailable` when the name would move.
Status point_root(storage::Records& store, RootReport& rr, const Hash128& closure,
                  const std::string& unit);

} // namespace kiln::memo
