// Fault injection for the reliability tests: named points where a write or a
// vendor call can be made to fail on demand ($KILN_FAULT). Inert unless set.
#pragma once

namespace kiln::fault {

/// True if the fault plan says the call at `point` should fail now.
bool hit(const char* point);

} // namespace kiln::fault
