// libkiln's side of the bridge (bridge/bridge.h): the table, filled once.
#include "bridge/bridge.h"

namespace kiln::bridge {
namespace {

Bridge make() {
  Bridge b{};
  b.size = sizeof(Bridge);
#define KILN_BRIDGE_FREE(field, ret, name, params, args) b.field = &name;
#define KILN_BRIDGE_MEMBER(field, ret, cls, method, params, args, quals) b.field = &cls::method;
#include "bridge/calls.inc"
#undef KILN_BRIDGE_FREE
#undef KILN_BRIDGE_MEMBER
  b.cache_flush_usage = &::kiln_cache::flush_usage;
  return b;
}

} // namespace
} // namespace kiln::bridge

extern "C" __attribute__((visibility("default"))) const kiln::bridge::Bridge*
kiln_private_bridge(void) {
  static const kiln::bridge::Bridge table = kiln::bridge::make();
  return &table;
}
