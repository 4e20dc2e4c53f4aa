// Fuzz target: IR ingest. Arbitrary bytes as a unit's input (textual IR or
// bitcode, chosen by the bytes' own magic, as ingest does): parse, link,
// verify, list the exports. Must return an error, never crash or hang.
#include "ir/unit.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llvm::LLVMContext ctx;
  kiln::ir::Input in;
  in.name = "fuzz.ll";
  in.bytes.assign(reinterpret_cast<const char*>(data), size);
  in.in_memory = true;
  auto unit = kiln::ir::ingest(ctx, {in});
  if (unit) {
    (void)kiln::ir::exported_functions(**unit, false);
    (void)kiln::ir::exported_functions(**unit, true);
  } else if (unit.error().message.empty()) {
    __builtin_trap(); // every error must say what was wrong
  }
  return 0;
}
