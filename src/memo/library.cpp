#include "memo/library.h"

#include "core/keys.h"
#include "image/image.h"

#include <algorithm>
#include <map>

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
  if (Status s = storage.records().images().put_library(*closure, lib); !s) {
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

std::vector<LibraryReport> record_libraries(storage::Storage& storage, const std::string& name,
                                            const std::vector<core::ClosureRecord>& closures,
                                            const std::vector<RootReport>& roots, bool link) {
  // One library per target, its roots in the request's order.
  std::vector<std::string> targets;
  std::map<std::string, std::vector<LibraryRoot>> by_target;
  std::map<std::string, std::string> failed;
  for (size_t i = 0; i < roots.size(); ++i) {
    const RootReport& r = roots[i];
    if (!by_target.count(r.target) && !failed.count(r.target))
      targets.push_back(r.target);
    if (r.closure.empty() || i >= closures.size() || closures[i].members.empty()) {
      // A root left to other shards has a note and no error: so has its
      // library, recorded by the run that completes the roots.
      if (!failed.count(r.target))
        failed[r.target] = (r.error.empty() ? "note" : "error") + std::string("root '") +
                           r.name + "' has no closure here" +
                           (r.error.empty() ? "" : " (" + r.error + ")");
      continue;
    }
    by_target[r.target].emplace_back(r.name, closures[i]);
  }
  std::vector<LibraryReport> out;
  for (const std::string& t : targets) {
    if (auto f = failed.find(t); f != failed.end()) {
      LibraryReport lr;
      lr.name = name;
      lr.target = t;
      bool error = f->second.compare(0, 5, "error") == 0;
      (error ? lr.error : lr.note) = "library '" + name + "' (" + t + ") not recorded: " +
                                     f->second.substr(error ? 5 : 4);
      out.push_back(std::move(lr));
      continue;
    }
    out.push_back(record_library(storage, name, t, by_target[t], link));
  }
  return out;
}

} // namespace kiln::memo
