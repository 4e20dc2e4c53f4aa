// Checks of what Kiln is handed back: an image before anything loads it, a
// bundle (export, import, the remote tier) before anything stores it. One
// verb, check_*, and one home. Problems are `corrupt`, naming the key and
// what is wrong. Keys are recomputed by core/keys.h; checksums of stored
// blobs are the store's own (storage/local/store.h).
#pragma once

#include "core/data_model.h"
#include "core/target.h"

#include <kiln/result.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::core {

/// True if the driver of `kind` resolves `symbol` when it loads an image,
/// so an image may leave it undefined. NVIDIA: what the CUDA toolkit's own
/// linker leaves to the driver, derived from the toolkit at build time
/// (cmake/cuda_driver_symbols.py): the PTX system calls (vprintf, malloc,
/// free, __assertfail), the device-side graph API (cudaGraphSetConditional,
/// cudaGraphLaunch, ...), and the calls the CUDA device runtime makes into
/// the driver (cnp*, __cuda_syscall_*). AMD and the host: none (device
/// libraries are linked into the image; host images are checked by dlopen).
bool supplied_at_load(TargetKind kind, const std::string& symbol);

/// An image before use: ELF for the machine of the closure's target, and
/// every job of the closure defined in it (GPU images: no undefined
/// functions either, except those the driver supplies).
Status check_image(const std::string& bytes, const ClosureRecord& closure);

/// check_image for the closures one image serves (a deferred cycle's roots,
/// a library's): the image read once, each closure checked against it.
class ImageCheck {
public:
  explicit ImageCheck(const std::string& bytes);
  /// check_image(bytes, closure)'s verdict.
  Status check(const ClosureRecord& closure) const { return check(closure, closure.members); }
  /// The same for `closure` with `members` (shared by the closures of one
  /// member set) in place of its own.
  Status check(const ClosureRecord& closure, const std::vector<ClosureMember>& members) const;

private:
  std::optional<Error> error_; ///< the image could not be read as ELF
  uint16_t machine_ = 0;
  std::set<std::string> defined_;
  std::vector<std::string> undefined_functions_; ///< in symbol table order
};

/// A bundle, whole: every job's key recomputed from its components, its
/// deferred symbol and artifacts present; every closure's key recomputed from
/// its members (all present, every open reference resolved); every image
/// checked as a loader would; every name pointing into the bundle.
Status check_bundle(const BundleData& data);

/// A closure record against its key: the root among the members and the key
/// recomputed from (root, members).
Status check_closure_key(const ClosureRecord& closure);

/// A root or library name before it is recorded: never of the form of a key
/// (32 hex digits, either case), since a lookup string of that form is
/// answered by closure key only. `kind` is "root" or "library". Refused as
/// `invalid_argument`, naming the name.
Status check_name(const std::string& name, const char* kind);

} // namespace kiln::core
