// libkiln-compiler's side of the bridge (bridge/bridge.h): each listed
// function, defined as a call through libkiln's table. Built into
// libkiln-compiler alone; programs that link the layers statically have the
// functions themselves.
#include "bridge/bridge.h"

#include <cstdio>
#include <cstdlib>

namespace kiln::bridge {
namespace {

const Bridge& table() {
  static const Bridge& b = [] () -> const Bridge& {
    const Bridge* t = kiln_private_bridge();
    if (!t || t->size != sizeof(Bridge)) {
      // Only a libkiln of another build of the same release can get here.
      std::fprintf(stderr, "libkiln-compiler: libkiln's bridge has %zu bytes, %zu expected: "
                           "libkiln and libkiln-compiler are from different builds\n",
                   t ? t->size : 0, sizeof(Bridge));
      std::abort();
    }
    return *t;
  }();
  return b;
}

} // namespace
} // namespace kiln::bridge

namespace kiln {
#define KILN_BRIDGE_FREE(field, ret, name, params, args)                                       \
  ret name params { return bridge::table().field args; }
#define KILN_BRIDGE_MEMBER(field, ret, cls, method, params, args, quals)                       \
  ret cls::method params quals { return (this->*bridge::table().field) args; }
#include "bridge/calls.inc"
#undef KILN_BRIDGE_FREE
#undef KILN_BRIDGE_MEMBER
} // namespace kiln

void kiln_cache::flush_usage() { (this->*kiln::bridge::table().cache_flush_usage)(); }
