// Kiln loader C++ API: RAII handles over the same loader as kiln.h.
// Loading a cached image never loads LLVM; a missing image is relinked from
// the closure's cached job artifacts (bringing in the linker lazily).
#pragma once

#include <kiln/kiln.h>
#include <kiln/result.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// A loaded image: the code of one closure, linked and loaded. Movable, not
/// copyable; unloads on destruction. Lookups are thread-safe.
class Image {
public:
  Image(Image&&) noexcept = default;
  Image& operator=(Image&&) noexcept = default;
  ~Image() = default;

  /// The address of a function of the closure by its original entry name.
  Result<void*> lookup(std::string_view entry) const;

  /// Typed form: `image.function<int(int)>("f")`.
  template <typename Fn> Result<Fn*> function(std::string_view entry) const {
    auto p = lookup(entry);
    if (!p)
      return p.error();
    return reinterpret_cast<Fn*>(*p);
  }

  kiln_image* raw() const { return img_.get(); }

  /// Takes ownership of an image from the C API (kiln_image_load,
  /// kiln_compile_or_load).
  static Image adopt(kiln_image* image) noexcept { return Image(image); }
  /// Gives up ownership: the caller releases it with kiln_image_release.
  kiln_image* release() noexcept { return img_.release(); }

private:
  friend class Cache;
  struct Release {
    void operator()(kiln_image* i) const { kiln_image_release(i); }
  };
  explicit Image(kiln_image* i) : img_(i) {}
  std::unique_ptr<kiln_image, Release> img_;
};

/// One thing Cache::verify found wrong.
struct CacheProblem {
  std::string kind;    ///< "artifact", "image", "closure", "job" or "name"
  std::string key;     ///< the key of what is wrong ("name (target)" for a name)
  std::string message; ///< what is wrong, naming it
};

/// A handle on a cache file. Thread-safe; images outlive it.
class Cache {
public:
  /// Opens the cache at `path`; empty means the default path.
  static Result<Cache> open(const std::string& path = {});
  /// Opens it with kiln_cache_open_flags' `flags` (KILN_CACHE_READ_ONLY).
  static Result<Cache> open(const std::string& path, unsigned flags);

  /// The default cache path: $KILN_CACHE, else $XDG_CACHE_HOME/kiln/kiln.db
  /// (XDG default ~/.cache).
  static Result<std::string> default_path();

  /// True if the cache was opened read-only (asked for, or not writable).
  bool read_only() const { return kiln_cache_read_only(cache_.get()) != 0; }

  /// Loads a root by 32-hex closure key (only ever read as a key) or else
  /// by entry name; empty target means the best match for this process's
  /// devices.
  Result<Image> load(std::string_view name, std::string_view target = {}) const;

  /// Loads a kernel library (kiln_library_load): one image holding all its
  /// roots' kernels; empty target means the best match.
  Result<Image> load_library(std::string_view name, std::string_view target = {}) const;

  /// Verifies the whole cache (as kiln_cache_verify): the problems found,
  /// none when it is healthy. An error means the cache could not be read.
  Result<std::vector<CacheProblem>> verify() const;

  kiln_cache* raw() const { return cache_.get(); }

  /// A handle on a cache the C API opened, which the caller keeps and
  /// closes (after every Cache borrowing it is gone).
  static Cache borrow(kiln_cache* cache) {
    return Cache(std::shared_ptr<kiln_cache>(cache, [](kiln_cache*) {}));
  }

private:
  struct Close {
    void operator()(kiln_cache* c) const { kiln_cache_close(c); }
  };
  explicit Cache(kiln_cache* c) : cache_(c, Close{}) {}
  explicit Cache(std::shared_ptr<kiln_cache> c) : cache_(std::move(c)) {}
  std::shared_ptr<kiln_cache> cache_;
};

} // namespace kiln
