// Fuzz target: PTX modules merged into one (link/ptx_merge.cpp), as image
// links do with a closure's stored PTX. The input is split into modules at
// each NUL byte. Merging either refuses with a reason or gives one module;
// that module merges again, alone, into the same text.
#include "link/ptx_merge.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> modules;
  for (size_t at = 0;;) {
    size_t nul = all.find('\0', at);
    modules.push_back(all.substr(at, nul == std::string::npos ? std::string::npos : nul - at));
    if (nul == std::string::npos)
      break;
    at = nul + 1;
  }
  std::vector<const std::string*> in;
  for (const std::string& m : modules)
    in.push_back(&m);
  std::string why;
  auto merged = kiln::link::merge_ptx(in, &why);
  if (!merged) {
    if (why.empty())
      __builtin_trap(); // a refusal always says why
    return 0;
  }
  std::vector<const std::string*> again{&*merged};
  auto twice = kiln::link::merge_ptx(again, &why);
  if (!twice || *twice != *merged)
    __builtin_trap(); // one merged module is a fixed point
  return 0;
}
