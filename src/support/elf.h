// A small, bounds-checked ELF64 reader: enough to check that a linked image
// is what we think it is (machine, type) and which symbols it defines or
// leaves undefined, before any driver or dlopen sees it. Treats its input
// as hostile. Knows nothing of jobs or caches.
#pragma once

#include <kiln/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

inline constexpr uint16_t kElfMachineX86_64 = 62;
inline constexpr uint16_t kElfMachineAArch64 = 183;
inline constexpr uint16_t kElfMachineCuda = 190;
inline constexpr uint16_t kElfMachineAmdgpu = 224;

struct ElfSymbol {
  std::string name;
  bool defined = false;
  bool function = false;
};

struct ElfInfo {
  uint16_t machine = 0;
  uint16_t type = 0; ///< ET_REL 1, ET_EXEC 2, ET_DYN 3
  std::vector<ElfSymbol> symbols; ///< from .symtab, else .dynsym
};

/// Parses the header and symbol table; malformed input is `corrupt`.
Result<ElfInfo> read_elf(std::string_view bytes);

} // namespace kiln
