#include "memo/library.h"

#include "core/keys.h"
#include "image/image.h"

#include <algorithm>

namespace kiln::memo {

LibraryReport record_library(storage::Storage& storage, const std::string& name,
                             const std::string& target, const std::vector<LibraryRoot>& roots,
                             bool link) {
  LibraryReport rep;
  rep.name = name;
  rep.target = target;
  rep.roots = roots.size();
  std::vector<core::ClosureRecord> closures;
  core::LibraryRecord lib{name, target, {}, {}};
  for (const auto& [root, closure] : roots) {
    closures.push_back(closure);
    lib.roots.push_back(root);
  }
  std::sort(lib.roots.begin(), lib.roots.end());
  auto closure = core::library_closure(closures);
  if (!closure) {
    rep.error = closure.error().context("library '" + name + "' (" + target + ")").message;
    return rep;
  }
  lib.closure = closure->key;
  rep.members = closure->members.size();
  if (Status s = storage.records().put_library(*closure, lib); !s) {
    rep.error = s.error().message;
    return rep;
  }
  rep.closure = closure->key.hex();
  storage.publish_closure(*closure);
  if (!link)
    return rep;
  auto image = image::fetch_or_link(storage, *closure);
  if (image)
    rep.image = true;
  else if (image.error().code == Code::unavailable)
    rep.note = image.error().message; // linked at first load where the linker exists
  else
    rep.error = image.error().context("linking library '" + name + "' (" + target + ")").message;
  return rep;
}

} // namespace kiln::memo
