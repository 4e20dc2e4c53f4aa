#include "driver/job_key.h"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <algorithm>
#include <sstream>

namespace kiln::driver {

namespace {

template <typename... Ts> Hash128 hash_of(const Ts&... parts) {
  std::ostringstream os;
  {
    cereal::PortableBinaryOutputArchive ar(os);
    ar(parts...);
  }
  return hash128(os.str());
}

} // namespace

std::string deferred_symbol(const JobIdentity& id) {
  return "__kiln_deferred_" +
         hash_of(std::string("kiln-deferred-symbol"), kKeyFormat, id.entry, id.target, id.options)
             .hex();
}

std::string placeholder_symbol(const std::string& entry) {
  return "__kiln_ref_" + hash_of(std::string("kiln-deferred-ref"), kKeyFormat, entry).hex();
}

Hash128 job_key(const KeyComponents& c) {
  return hash_of(std::string("kiln-job"), kKeyFormat, c.module_hash, c.identity.entry,
                 c.identity.target, c.identity.options, c.toolchain);
}

Hash128 closure_key(const Hash128& root, ClosureMap members) {
  std::sort(members.begin(), members.end());
  return hash_of(std::string("kiln-closure"), kKeyFormat, root, members);
}

Result<KeyComponents> components_of(const std::string& module_hash_hex, const std::string& entry,
                                    const std::string& target, const std::string& triple,
                                    const std::string& cpu, const std::string& features,
                                    const std::string& options, const std::string& toolchain) {
  KeyComponents c;
  auto mh = parse_hash128(module_hash_hex);
  if (!mh)
    return make_error(Code::corrupt, "module hash: " + mh.error().message);
  c.module_hash = *mh;
  c.identity.entry = entry;
  c.identity.target.spec = target;
  c.identity.target.kind = target.rfind("sm_", 0) == 0    ? codegen::TargetKind::nvptx
                           : target.rfind("gfx", 0) == 0  ? codegen::TargetKind::amdgpu
                                                          : codegen::TargetKind::host;
  c.identity.target.triple = triple;
  c.identity.target.cpu = cpu;
  c.identity.target.features = features;
  // Options are stored canonically: "-O<0..3>" optionally followed by " -g".
  if (options.size() < 3 || options.compare(0, 2, "-O") != 0 || options[2] < '0' ||
      options[2] > '3' || (options.size() != 3 && options.substr(3) != " -g"))
    return make_error(Code::corrupt, "options '" + options + "' are not Kiln's canonical form");
  c.identity.options.opt_level = options[2] - '0';
  c.identity.options.debug = options.size() > 3;
  c.toolchain = toolchain;
  return c;
}

} // namespace kiln::driver
