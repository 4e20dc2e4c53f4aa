// Key components by name, and how two jobs' components differ.
#include "core/explain.h"

#include "core/keys.h"

namespace kiln::core {

std::vector<NamedComponent> named_components(const JobRecord& j) {
  auto c = components_of(j.module_hash.hex(), j.entry, j.target, j.triple, j.cpu, j.features,
                         j.options, j.toolchain);
  std::string opt = c ? std::to_string(c->identity.options.opt_level) : j.options;
  std::string debug = c ? (c->identity.options.debug ? "true" : "false") : j.options;
  return {{"module_hash", j.module_hash.hex()}, {"entry", j.entry}, {"target", j.target},
          {"triple", j.triple}, {"cpu", j.cpu}, {"features", j.features},
          {"opt_level", opt}, {"debug", debug}, {"toolchain", j.toolchain}};
}

std::vector<KeyDifference> compare_keys(const JobRecord& a, const JobRecord& b) {
  std::vector<NamedComponent> ca = named_components(a), cb = named_components(b);
  std::vector<KeyDifference> out;
  for (size_t i = 0; i < ca.size(); ++i)
    if (ca[i].value != cb[i].value)
      out.push_back({ca[i].name, ca[i].value, cb[i].value});
  return out;
}

} // namespace kiln::core
