// Host images: check the bytes are a shared object for this machine, then
// dlopen them from an anonymous memory file, so nothing touches the disk.
#include "runtime/host/host_loader.h"

#include "runtime/host/host_status.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

namespace kiln::runtime {

namespace {

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
#else
#error "unsupported host architecture"
#endif

class HostModule final : public LoadedModule {
public:
  explicit HostModule(void* handle) : handle_(handle) {}
  void* handle() const override { return handle_; }
  ~HostModule() override {
    if (handle_)
      dlclose(handle_);
  }

private:
  void* handle_;
};

// The path dlopen is given for memfd `fd` (inode `ino`), unique in this
// process. glibc takes an object whose path it has loaded before for the
// same object, so "/proc/self/fd/N" alone would alias once fd N is closed
// and reused. The load number and the memory file's inode are spelled into
// the directory part, a bit each: "/" (an empty name) for 0, "/." for 1, and
// "/fd/.." between the two numbers; the kernel walks none of the bits (only
// the one "fd" lookup between them), and each splits at its slashes, so the
// path gives the two numbers back. The descriptor can then be closed as
// soon as the object is mapped: no descriptor per image, except the few a
// handle keeps for its warm images (runtime/warm.h). The inode makes the
// path unique beyond this copy of the loader: another copy in the process
// (a second libkiln, a static one) counts its loads from 1 too, and was
// given the object of a name this copy had made; an inode is no other live
// memory file's while an object maps it.
std::string unique_fd_path(int fd, uint64_t ino) {
  static std::atomic<uint64_t> loads{0};
  uint64_t n = loads.fetch_add(1) + 1;
  std::string path = "/proc/self";
  for (; n; n >>= 1)
    path += (n & 1) ? "/." : "/";
  path += "/fd/..";
  for (; ino; ino >>= 1)
    path += (ino & 1) ? "/." : "/";
  return path + "/fd/" + std::to_string(fd);
}

// Treat the cache as hostile: only a well-formed ELF shared object for this
// machine reaches dlopen, whatever the checksum said.
Status validate_elf(const std::string& b, const std::string& what) {
  if (b.size() < sizeof(Elf64_Ehdr) || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0)
    return make_error(Code::corrupt, what + " is not an ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return make_error(Code::corrupt, what + " is not a 64-bit little-endian ELF file");
  if (eh.e_type != ET_DYN)
    return make_error(Code::corrupt, what + " is not a shared object");
  if (eh.e_machine != kMachine)
    return make_error(Code::corrupt, what + " is for another machine (e_machine " +
                                         std::to_string(eh.e_machine) + ")");
  if (eh.e_phoff > b.size() || eh.e_phnum * uint64_t(sizeof(Elf64_Phdr)) > b.size() - eh.e_phoff)
    return make_error(Code::corrupt, what + " has program headers outside the file");
  return Status::ok();
}

} // namespace

Result<std::shared_ptr<HostImageFile>> HostImageFile::make(const std::string& bytes,
                                                           const std::string& what) {
  // check_image ran when the image was stored or linked; this guards dlopen itself.
  KILN_TRY(validate_elf(bytes, what));
  int fd = ::memfd_create("kiln-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 && errno == EINVAL)
    fd = ::memfd_create("kiln-image", MFD_CLOEXEC); // no sealing here: not kept
  if (fd < 0)
    return make_error(Code::unavailable, "memfd_create failed: " + host_errno_text(errno));
  std::shared_ptr<HostImageFile> file(new HostImageFile(fd, bytes.size(), what));
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return make_error(Code::internal,
                      "cannot stat the memory file of " + what + ": " + host_errno_text(errno));
  file->ino_ = uint64_t(st.st_ino);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return make_error(Code::internal,
                        "cannot write the image to memory: " + host_errno_text(errno));
    off += size_t(n);
  }
  // Unsealed (refused by the system), the file serves this load and is not
  // kept: only bytes nothing can change are loaded again.
  file->sealed_ =
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0;
  return file;
}

HostImageFile::~HostImageFile() { ::close(fd_); }

Result<std::unique_ptr<LoadedModule>> HostImageFile::load(const core::ClosureRecord& closure,
                                                          SymbolMap& symbols,
                                                          std::shared_ptr<const OffsetMap>* shared,
                                                          uintptr_t* base) const {
  std::string path = unique_fd_path(fd_, ino_);
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return make_error(Code::corrupt, "dlopen of " + what_ + " failed: " + host_dl_error());
  auto mod = std::make_unique<HostModule>(handle);
  // The C library takes a file it has loaded already (the same device and
  // inode) for the object loaded from it, under that object's path: an
  // image of this file still loaded, or one its loader keeps.
  link_map* lm = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || path != lm->l_name)
    return std::unique_ptr<LoadedModule>();
  if (offsets_) {
    if (shared && base) {
      *shared = offsets_;
      *base = lm->l_addr;
    } else {
      for (const auto& [entry, offset] : *offsets_)
        symbols.emplace(entry, reinterpret_cast<void*>(lm->l_addr + offset));
    }
    return std::unique_ptr<LoadedModule>(std::move(mod));
  }
  for (const core::ClosureMember& m : closure.members) {
    void* p = ::dlsym(handle, m.symbol.c_str());
    if (!p)
      return make_error(Code::corrupt, what_ + " lacks symbol " + m.symbol + " (entry " +
                                           m.entry +
                                           // A published closure names no jobs.
                                           (m.job == Hash128{} ? "" : ", job " + m.job.hex()) +
                                           ")");
    symbols.emplace(m.entry, p);
  }
  return std::unique_ptr<LoadedModule>(std::move(mod));
}

void HostImageFile::remember(const SymbolMap& symbols, const LoadedModule& module) {
  link_map* lm = nullptr;
  if (::dlinfo(module.handle(), RTLD_DI_LINKMAP, &lm) != 0 || !lm)
    return;
  auto out = std::make_shared<OffsetMap>();
  out->reserve(symbols.size());
  for (const auto& [entry, p] : symbols) {
    Dl_info info{};
    if (!p || !::dladdr(p, &info) || info.dli_fbase != reinterpret_cast<void*>(lm->l_addr) ||
        reinterpret_cast<uintptr_t>(p) < lm->l_addr)
      return;
    out->emplace(entry, reinterpret_cast<uintptr_t>(p) - lm->l_addr);
  }
  offsets_ = std::move(out);
}

Result<std::unique_ptr<LoadedModule>> load_host_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols,
                                                      std::shared_ptr<HostImageFile>* kept) {
  KILN_TRY_ASSIGN(auto file,
                  HostImageFile::make(bytes, "image of closure " + closure.key.hex()));
  // A new file is no other object's: never taken for one.
  KILN_TRY_ASSIGN(auto mod, file->load(closure, symbols));
  if (!mod)
    return make_error(Code::internal, "the dynamic loader took " + file->what() +
                                          ", in a new memory file, for an object already loaded");
  if (kept) {
    file->remember(symbols, *mod);
    *kept = std::move(file);
  }
  return mod; // the mapping keeps the memory; an unkept descriptor closes with `file`
}

Result<std::unique_ptr<LoadedModule>> load_host_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols,
                                                      std::shared_ptr<KeptImage>* kept) {
  std::shared_ptr<HostImageFile> file;
  auto mod = load_host_image(bytes, closure, symbols, kept ? &file : nullptr);
  if (mod && kept)
    *kept = std::move(file);
  return mod;
}

} // namespace kiln::runtime
