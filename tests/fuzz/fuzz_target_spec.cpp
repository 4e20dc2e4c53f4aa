// Fuzz target: the short strings users type: target specs (--target),
// sizes and durations (gc, config, KILN_CACHE_MAX_SIZE). Each is accepted or refused with a message; a resolved
// target resolves again to itself.
#include "codegen/llvm_target.h"
#include "support/units.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string s(reinterpret_cast<const char*>(data), size);
  auto t = kiln::codegen::resolve_target(s);
  if (t) {
    auto again = kiln::codegen::resolve_target(t->spec);
    if (!again || again->spec != t->spec || again->features != t->features)
      __builtin_trap(); // the canonical spec must be a fixed point
  } else if (t.error().message.find(kiln::codegen::accepted_target_specs()) == std::string::npos &&
             t.error().message.empty()) {
    __builtin_trap();
  }
  (void)kiln::parse_size(s);
  (void)kiln::parse_duration(s);
  return 0;
}
