// Host images: shared objects for this machine, loaded from memory with the
// C library's dynamic loader; lookups give function addresses.
//
// Unlike cuda/ and hip/, host/ has no <dev>_symbols.def or dynamic-symbols
// table: its "driver" is the C library's own dynamic loader (dlopen, dlsym,
// memfd_create), which every process already has and Kiln links directly.
// There is no vendor library that may be missing, so nothing to resolve at
// first use and no dlopen fault point; a host load fails only on the image.
#pragma once

#include "core/data_model.h"
#include "runtime/module.h"

#include <kiln/result.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln::runtime {

/// A checked host image in an anonymous memory file, sealed: its bytes can
/// no longer change, through this descriptor or any other, so it can be
/// loaded again without being written again. Owns the descriptor.
class HostImageFile final : public KeptImage {
public:
  /// Checks that `bytes` is a 64-bit little-endian ELF shared object for
  /// this machine (corrupt otherwise: the cache is not trusted) and writes
  /// it to a new memory file, sealed where the system allows it (a sandbox
  /// may refuse seals: the file then serves this load only). `what` names
  /// the image in errors.
  static Result<std::shared_ptr<HostImageFile>> make(const std::string& bytes,
                                                     const std::string& what);
  ~HostImageFile() override;
  HostImageFile(const HostImageFile&) = delete;
  HostImageFile& operator=(const HostImageFile&) = delete;
  size_t size() const override { return size_; }
  const std::string& what() const { return what_; }
  int fd() const { return fd_; }
  /// Whether its bytes can no longer change: only a sealed file is kept.
  bool sealed() const override { return sealed_; }

  /// Loads the image as a new object and fills `symbols` with every
  /// member's address by entry name. nullptr, and nothing loaded, when the
  /// dynamic loader would give back an object already loaded from this file
  /// (an image still loaded from it): every load is an object of its own,
  /// with its own globals, so the caller then writes the bytes to a new
  /// file. Once remember() has run, the members are not looked up again:
  /// each lies where it lay in the first object, from the object's base;
  /// given `shared` and `base`, the file's own table of those offsets and
  /// the new object's base are handed out instead, and `symbols` is left
  /// empty (a load then allocates nothing per member).
  Result<std::unique_ptr<LoadedModule>> load(const core::ClosureRecord& closure,
                                             SymbolMap& symbols,
                                             std::shared_ptr<const OffsetMap>* shared = nullptr,
                                             uintptr_t* base = nullptr) const override;
  /// Records where `symbols` (a load of this file, `module`) lie from the
  /// object's base, if every one lies inside the object (an IFUNC may give
  /// an address in another library: then nothing is recorded). Before the
  /// file is shared: not thread-safe.
  void remember(const SymbolMap& symbols, const LoadedModule& module);
  bool remembered() const { return offsets_ != nullptr; }

private:
  HostImageFile(int fd, size_t size, std::string what)
      : fd_(fd), size_(size), what_(std::move(what)) {}
  int fd_;
  size_t size_;
  std::string what_;
  uint64_t ino_ = 0; ///< the memory file's inode, spelled into each load's path
  bool sealed_ = false;
  std::shared_ptr<const OffsetMap> offsets_; ///< null until remember() records them
};

/// Loads `bytes` (checked as HostImageFile::make checks them) from a memory
/// file of its own and fills `symbols`. The file is given to `kept` where
/// one is passed (runtime/warm.h), else closed once the image is mapped.
Result<std::unique_ptr<LoadedModule>> load_host_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols,
                                                      std::shared_ptr<HostImageFile>* kept);

/// The host backend's load (Backend::load): load_host_image, its memory
/// file given to `kept` where one is passed.
Result<std::unique_ptr<LoadedModule>> load_host_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols,
                                                      std::shared_ptr<KeptImage>* kept = nullptr);

} // namespace kiln::runtime
