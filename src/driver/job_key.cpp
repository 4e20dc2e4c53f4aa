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

Hash128 job_key(const KeyComponents& c) {
  return hash_of(std::string("kiln-job"), kKeyFormat, c.module_hash, c.identity.entry,
                 c.identity.target, c.identity.options, c.toolchain);
}

Hash128 closure_key(const Hash128& root, ClosureMap members) {
  std::sort(members.begin(), members.end());
  return hash_of(std::string("kiln-closure"), kKeyFormat, root, members);
}

} // namespace kiln::driver
