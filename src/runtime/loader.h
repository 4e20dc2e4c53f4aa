// The loader: name or key → closure → image (cached, or relinked from the
// closure's job artifacts and stored) → loaded → function addresses by the
// jobs' original entry names. Free of LLVM; the linker is dlopen'd lazily.
#pragma once

#include "cache/store.h"
#include "remote/tier.h"

#include <kiln/result.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kiln::runtime {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// A loaded image's symbol table: entry name → address.
using SymbolMap = std::unordered_map<std::string, void*, StringHash, std::equal_to<>>;

/// What the loader needs of a loaded module, whatever the device.
class LoadedModule {
public:
  virtual ~LoadedModule() = default;
  /// dlopen handle, CUmodule or hipModule_t.
  virtual void* handle() const = 0;
};

/// Host images: validated, then loaded from memory (memfd) with dlopen.
Result<std::unique_ptr<LoadedModule>> load_host_image(const std::string& bytes,
                                                      const cache::ClosureRecord& closure,
                                                      SymbolMap& symbols);

/// NVIDIA images: loaded through the CUDA driver (libcuda.so.1, dlopen'd);
/// lookups give CUfunction handles of the closure's kernels.
Result<std::unique_ptr<LoadedModule>> load_cuda_image(const std::string& bytes,
                                                      const cache::ClosureRecord& closure,
                                                      SymbolMap& symbols);
/// AMD images: loaded through HIP (libamdhip64.so, dlopen'd); lookups give
/// hipFunction_t handles.
Result<std::unique_ptr<LoadedModule>> load_hip_image(const std::string& bytes,
                                                     const cache::ClosureRecord& closure,
                                                     SymbolMap& symbols);
/// Of the targets a cache has for a root, the one this process's NVIDIA
/// device runs best; empty when none fits or there is no device.
Result<std::string> choose_cuda_target(const std::vector<std::string>& have);
/// Whether code for an NVIDIA target must go through the driver's PTX JIT
/// on this device (its cubin does not run there); unavailable if neither
/// path runs it or there is no device.
Result<bool> cuda_needs_jit(const std::string& target);
/// The device's arch ("sm_90") and the driver JIT's fingerprint, which key
/// the images the JIT makes.
Result<std::string> cuda_device_arch();
/// The AMD device's target spec ("gfx942:xnack-:sramecc+"); unavailable
/// without HIP or a device.
Result<std::string> hip_device_arch();
/// A HIP gcnArchName ("gfx942:sramecc+:xnack-") as a target spec.
std::string hip_target_spec(const std::string& gcn_arch_name);
Result<std::string> cuda_jit_fingerprint();
/// Links the closure's PTX with the driver's JIT into a cubin for the device.
Result<std::string> cuda_jit_link(const std::vector<std::string>& ptx,
                                  const std::vector<std::string>& names);
/// Same for an AMD device: an exact gfx + features match.
Result<std::string> choose_hip_target(const std::vector<std::string>& have);

/// Links a closure's host objects through the lazily loaded linker library.
Result<std::string> link_host_image(const std::vector<std::string>& objects,
                                    const std::vector<std::string>& names);
/// Links a closure's AMDGPU bitcode into an HSACO through the linker library.
Result<std::string> link_amdgpu_image(const std::vector<std::string>& bitcode,
                                      const std::vector<std::string>& names,
                                      const std::string& cpu, const std::string& features);
/// The fingerprint of the linker the loader would use, without loading it.
const char* host_linker_fingerprint();

/// The image "architecture" of the host: the image key's arch column.
const char* host_arch();

} // namespace kiln::runtime

/// The C handle types, defined here so the C++ API and the C API share them.
struct kiln_cache {
  std::unique_ptr<kiln::cache::Store> store;
  /// The shared tier ($KILN_REMOTE), or null: consulted on a local miss of a
  /// name, closure or image; linked images are published to it.
  std::unique_ptr<kiln::remote::Tier> remote;

  /// Loads are counted and closures marked used in memory, and written in
  /// one transaction when the handle closes (or every kFlushEvery loads):
  /// the hot path does no write per load.
  static constexpr size_t kFlushEvery = 256;
  std::mutex usage_mu;
  kiln::cache::Counters usage;
  std::vector<kiln::Hash128> used;

  void record_load(const kiln::Hash128& closure, bool linked);
  void flush_usage();
  ~kiln_cache() { flush_usage(); }
};

struct kiln_image {
  std::unique_ptr<kiln::runtime::LoadedModule> module;
  kiln::runtime::SymbolMap symbols;
  kiln::Hash128 closure;
  std::string target;
};

namespace kiln::runtime {
/// The whole load: resolve, fetch or relink, load.
Result<std::unique_ptr<kiln_image>> load_image(kiln_cache& cache, std::string_view name,
                                               std::string_view target);
/// Sets this thread's kiln_last_error() (the compiler's C API reports its
/// failures there too).
void set_last_error(const std::string& message);
} // namespace kiln::runtime
