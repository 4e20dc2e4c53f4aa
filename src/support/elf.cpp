#include "support/elf.h"

#include <elf.h>

#include <cstring>

namespace kiln {

namespace {

template <typename T> bool read_at(std::string_view b, uint64_t off, T* out) {
  if (off > b.size() || sizeof(T) > b.size() - off)
    return false;
  std::memcpy(out, b.data() + off, sizeof(T));
  return true;
}

} // namespace

Result<ElfInfo> read_elf(std::string_view b) {
  auto bad = [](const std::string& why) { return make_error(Code::corrupt, "bad ELF: " + why); };
  Elf64_Ehdr eh;
  if (!read_at(b, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return bad("no ELF header");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return bad("not 64-bit little-endian");
  ElfInfo info;
  info.machine = eh.e_machine;
  info.type = eh.e_type;
  if (eh.e_shoff == 0 || eh.e_shnum == 0)
    return info;
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    return bad("unexpected section header size");
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (uint16_t i = 0; i < eh.e_shnum; ++i)
    if (!read_at(b, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), &sh[i]))
      return bad("section header outside the file");
  auto pick = [&](uint32_t type) -> int {
    for (uint16_t i = 0; i < eh.e_shnum; ++i)
      if (sh[i].sh_type == type)
        return i;
    return -1;
  };
  int symtab = pick(SHT_SYMTAB);
  if (symtab < 0)
    symtab = pick(SHT_DYNSYM);
  if (symtab < 0)
    return info;
  const Elf64_Shdr& st = sh[size_t(symtab)];
  if (st.sh_link >= eh.e_shnum || st.sh_entsize != sizeof(Elf64_Sym))
    return bad("malformed symbol table");
  const Elf64_Shdr& strs = sh[st.sh_link];
  if (strs.sh_offset > b.size() || strs.sh_size > b.size() - strs.sh_offset)
    return bad("string table outside the file");
  std::string_view names = b.substr(strs.sh_offset, strs.sh_size);
  uint64_t count = st.sh_size / sizeof(Elf64_Sym);
  for (uint64_t i = 1; i < count; ++i) {
    Elf64_Sym sym;
    if (!read_at(b, st.sh_offset + i * sizeof(Elf64_Sym), &sym))
      return bad("symbol outside the file");
    if (sym.st_name >= names.size())
      return bad("symbol name outside the string table");
    std::string_view rest = names.substr(sym.st_name);
    size_t nul = rest.find('\0');
    if (nul == std::string_view::npos)
      return bad("unterminated symbol name");
    ElfSymbol s;
    s.name = std::string(rest.substr(0, nul));
    s.defined = sym.st_shndx != SHN_UNDEF;
    s.function = ELF64_ST_TYPE(sym.st_info) == STT_FUNC;
    if (!s.name.empty())
      info.symbols.push_back(std::move(s));
  }
  return info;
}

} // namespace kiln
