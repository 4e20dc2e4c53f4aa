// Unit tests for the host loader (src/runtime/host/host_loader.h): only a
// well-formed ELF shared object for this machine reaches dlopen, and what
// dlopen refuses is reported, not crashed on.
#include "runtime/host/host_loader.h"

#include "fixtures/records.hpp"

#include <doctest/doctest.h>

#include <elf.h>

#include <cstring>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::test;

namespace {

#if defined(__x86_64__)
constexpr uint16_t kThisMachine = EM_X86_64;
constexpr uint16_t kOtherMachine = EM_AARCH64;
#else
constexpr uint16_t kThisMachine = EM_AARCH64;
constexpr uint16_t kOtherMachine = EM_X86_64;
#endif

// An ELF header that passes every check the loader makes before dlopen,
// and nothing after it.
Elf64_Ehdr good_header() {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = kThisMachine;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  return eh;
}

std::string bytes_of(const Elf64_Ehdr& eh) {
  return std::string(reinterpret_cast<const char*>(&eh), sizeof eh);
}

core::ClosureRecord closure() { return lone_closure("host-loader-test", "host"); }

// The load's error, which must be `corrupt` with `words` in its message.
void check_refused(const std::string& bytes, const std::string& words) {
  SymbolMap symbols;
  auto mod = load_host_image(bytes, closure(), symbols);
  REQUIRE_FALSE(mod);
  CHECK(mod.error().code == Code::corrupt);
  CHECK_MESSAGE(mod.error().message.find(words) != std::string::npos, mod.error().message);
  CHECK(mod.error().message.find(closure().key.hex()) != std::string::npos);
  CHECK(symbols.empty());
}

} // namespace

TEST_CASE("the host loader refuses what is not an ELF file") {
  check_refused("", "is not an ELF file");
  check_refused(std::string(200, 'x'), "is not an ELF file");
  check_refused(std::string(ELFMAG) + "short", "is not an ELF file");
}

TEST_CASE("the host loader refuses an ELF file for another machine or of another kind") {
  Elf64_Ehdr other = good_header();
  other.e_machine = kOtherMachine;
  check_refused(bytes_of(other), "is for another machine (e_machine " +
                                     std::to_string(kOtherMachine) + ")");
  Elf64_Ehdr exec = good_header();
  exec.e_type = ET_EXEC;
  check_refused(bytes_of(exec), "is not a shared object");
  Elf64_Ehdr big_endian = good_header();
  big_endian.e_ident[EI_DATA] = ELFDATA2MSB;
  check_refused(bytes_of(big_endian), "is not a 64-bit little-endian ELF file");
  Elf64_Ehdr outside = good_header();
  outside.e_phnum = 4;
  check_refused(bytes_of(outside), "has program headers outside the file");
}

TEST_CASE("an image that passes the checks but that dlopen refuses is corrupt, with the reason") {
  // A bare header: no segments to map.
  SymbolMap symbols;
  auto mod = load_host_image(bytes_of(good_header()), closure(), symbols);
  REQUIRE_FALSE(mod);
  CHECK(mod.error().code == Code::corrupt);
  CHECK_MESSAGE(mod.error().message.find("dlopen of image of closure ") == 0, mod.error().message);
  CHECK(mod.error().message.find(" failed: ") != std::string::npos);
  CHECK(mod.error().message.find("failed: unknown") == std::string::npos); // dlerror() was read
}
