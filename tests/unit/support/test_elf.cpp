// Unit tests for the bounds-checked ELF reader (src/support/elf.cpp).
#include "support/elf.h"
#include "support/files.h"

#include <doctest/doctest.h>

using namespace kiln;

TEST_CASE("read_elf reads this program's machine, type and symbols") {
  auto bytes = read_file("/proc/self/exe");
  REQUIRE(bytes);
  auto elf = read_elf(*bytes);
  REQUIRE(elf);
#if defined(__x86_64__)
  CHECK(elf->machine == kElfMachineX86_64);
#endif
  CHECK((elf->type == 2 || elf->type == 3)); // executable or PIE
  bool main_defined = false;
  for (const ElfSymbol& s : elf->symbols)
    main_defined |= s.name == "main" && s.defined && s.function;
  CHECK(main_defined);
}

TEST_CASE("read_elf refuses what is not a whole ELF file as corrupt") {
  auto bytes = read_file("/proc/self/exe");
  REQUIRE(bytes);
  for (std::string_view bad : {std::string_view(""), std::string_view("\x7f" "ELF"),
                               std::string_view(*bytes).substr(0, 63),
                               std::string_view("plain text, not an object file")}) {
    auto elf = read_elf(bad);
    REQUIRE_FALSE(elf);
    CHECK(elf.error().code == Code::corrupt);
  }
  // Section headers pointing past the end of the file.
  std::string cut = bytes->substr(0, bytes->size() / 2);
  auto elf = read_elf(cut);
  if (elf) // the symbol table may lie in the first half; then the rest must be sane
    CHECK(elf->machine != 0);
  else
    CHECK(elf.error().code == Code::corrupt);
}
