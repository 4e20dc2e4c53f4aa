// What every path that answers a request records for a root (memo/record.h).
#include "memo/record.h"

namespace kiln::memo {

void report_image(RootReport& rr, const Status& image) {
  if (image) {
    rr.image = true;
    return;
  }
  if (image.error().code == Code::unavailable) {
    rr.note = image.error().message; // the loader links it where the linker exists
    return;
  }
  rr.error = Error(image.error()).context("linking root '" + rr.name + "'").message;
}

Status point_root(storage::Records& store, RootReport& rr, const Hash128& closure,
                  const std::string& unit) {
  rr.unit = unit;
  // Written only when it would change; a read-only cache whose name already
  // names the closure answers as it is (the unit it records may differ).
  if (auto now = store.names().read_name(rr.name, rr.target);
      now && *now && (*now)->first == closure && ((*now)->second == unit || store.read_only()))
    return Status::ok();
  KILN_TRY_ASSIGN(auto moved, store.names().point_name({rr.name, rr.target, closure}, unit));
  if (moved) {
    rr.previous_closure = moved->old_closure.hex();
    rr.previous_unit = moved->old_unit;
  }
  return Status::ok();
}

} // namespace kiln::memo
