// The C API (kiln.h) and the C++ API (kiln.hpp) over the loader, and the
// registry of live handles (runtime/handles.h) that the C entry points of
// libkiln and libkiln-compiler check every handle against.
#include "runtime/c_entry.h"
#include "runtime/handle_set.h"
#include "runtime/loader.h"

#include "support/files.h"

#include <kiln/kiln.hpp>

#include <cstdlib>

namespace {

thread_local std::string t_last_error;

kiln_status fail(const kiln::Error& e) {
  t_last_error = e.message;
  return static_cast<kiln_status>(e.code);
}

// Sized for the handles a process keeps at once; more still work (handle_set.h).
constinit kiln::runtime::HandleSet<1024> g_caches;
constinit kiln::runtime::HandleSet<4096> g_images;

// A handle that is not live: the entry point `fn` refuses it (kept out of
// line, so that the checks cost the hot calls a compare and a branch).
[[gnu::cold, gnu::noinline]] kiln_status not_live(const char* fn, const char* arg,
                                                  kiln::runtime::HandleType type) {
  t_last_error = kiln::runtime::not_live_message(fn, arg, type);
  return KILN_INVALID_ARGUMENT;
}

// kiln_cache::open_storage: the cache file (and the remote) as
// kiln_cache_open was asked to open them.
kiln::Status open_storage(kiln_cache& cache) {
  // $KILN_REMOTE gives every program the shared remote unchanged; a bad
  // value is an error here, a down server only a notice at first use.
  auto mode = (cache.flags & KILN_CACHE_READ_ONLY) ? kiln::storage::OpenMode::read_only
                                                   : kiln::storage::OpenMode::automatic;
  auto storage = kiln::storage::Storage::open(
      cache.path, (cache.flags & KILN_CACHE_LOCAL_ONLY) ? "off" : "", false, mode);
  if (!storage)
    return storage.error();
  (*storage)->records().defer_checkpoint(); // a loading process's close costs no fsync
  cache.storage = storage.take();
  return kiln::Status::ok();
}

} // namespace

namespace kiln::runtime {

void set_last_error(const std::string& message) { t_last_error = message; }

void handle_added(HandleType type, const void* handle) {
  type == HandleType::cache ? g_caches.add(handle) : g_images.add(handle);
}

bool handle_taken(HandleType type, const void* handle) {
  return type == HandleType::cache ? g_caches.take(handle) : g_images.take(handle);
}

bool handle_live(HandleType type, const void* handle) {
  return type == HandleType::cache ? g_caches.contains(handle) : g_images.contains(handle);
}
} // namespace kiln::runtime

extern "C" {

kiln_status kiln_cache_open(const char* path, kiln_cache** out) {
  return kiln_cache_open_flags(path, 0, out);
}

kiln_status kiln_cache_open_flags(const char* path, unsigned flags, kiln_cache** out) {
  return kiln::runtime::c_entry("kiln_cache_open", [&]() -> kiln_status {
    if (!out)
      return fail(kiln::make_error(kiln::Code::invalid_argument, "kiln_cache_open: out is NULL"));
    *out = nullptr;
    if (flags & ~unsigned(KILN_CACHE_READ_ONLY | KILN_CACHE_LOCAL_ONLY))
      return fail(kiln::make_error(kiln::Code::invalid_argument,
                                   "kiln_cache_open: unknown flags " + std::to_string(flags)));
    // "" is refused rather than read as "the default": an empty string is
    // far more often a path that went missing than a request for the
    // default cache, and opening another cache than the one meant would go
    // unnoticed.
    if (path && !*path)
      return fail(kiln::make_error(kiln::Code::invalid_argument,
                                   "kiln_cache_open: the path is empty (\"\"); pass NULL for "
                                   "the default cache"));
    std::string p;
    if (path) {
      p = path;
    } else {
      auto d = kiln::default_cache_path();
      if (!d)
        return fail(d.error());
      p = *d;
    }
    auto cache = std::make_unique<kiln_cache>();
    cache->path = p;
    cache->flags = flags;
    // $KILN_READ_ONLY as it is now, not when the file is opened later.
    if (const char* ro = std::getenv("KILN_READ_ONLY"); ro && *ro && std::string_view(ro) != "0")
      cache->flags |= KILN_CACHE_READ_ONLY;
    cache->open_storage = &open_storage;
    // With published host images beside the file and no remote to ask, the
    // cache file is opened only when a call needs more than they hold. Any
    // doubt about them (damaged, of another file) opens the file now; the
    // file's open reports what the trust rules refuse.
    const char* remote = std::getenv("KILN_REMOTE");
    if ((flags & KILN_CACHE_LOCAL_ONLY) || !remote || !*remote)
      if (auto published = kiln::storage::PublishedImages::open(p)) {
        cache->published = published.take();
        cache->published_cpu_ok =
            std::make_unique<std::atomic<int8_t>[]>(cache->published->cpu_count());
      }
    if (!cache->published)
      if (kiln::Status opened = open_storage(*cache); !opened)
        return fail(opened.error());
    *out = cache.release();
    return KILN_OK;
  });
}

int kiln_cache_read_only(kiln_cache* cache) {
  if (!cache)
    return 0;
  if (!g_caches.contains(cache)) [[unlikely]] {
    not_live("kiln_cache_read_only", "cache", kiln::runtime::HandleType::cache);
    return 0;
  }
  // It may open the cache file: nothing it throws (out of memory) crosses
  // into C.
  try {
    auto store = cache->store();
    return store && (*store)->records().read_only() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

void kiln_cache_close(kiln_cache* cache) {
  if (!cache)
    return;
  // Taken out of the registry first, so that of two closes (one after the
  // other, or racing) exactly one deletes it; the other is told.
  if (!g_caches.take(cache)) {
    not_live("kiln_cache_close", "cache", kiln::runtime::HandleType::cache);
    return;
  }
  cache->registered = false;
  delete cache;
}

kiln_status kiln_image_load(kiln_cache* cache, const char* name, const char* target,
                            kiln_image** out) {
  return kiln::runtime::c_entry("kiln_image_load", [&]() -> kiln_status {
    if (!cache || !name || !out)
      return fail(kiln::make_error(kiln::Code::invalid_argument,
                                   "kiln_image_load: cache, name and out must not be NULL"));
    *out = nullptr;
    if (!g_caches.contains(cache)) [[unlikely]]
      return not_live("kiln_image_load", "cache", kiln::runtime::HandleType::cache);
    auto img = kiln::runtime::load(*cache, {name, target ? target : ""});
    if (!img)
      return fail(img.error());
    *out = img.take().release();
    return KILN_OK;
  });
}

kiln_status kiln_library_load(kiln_cache* cache, const char* name, const char* target,
                              kiln_image** out) {
  return kiln::runtime::c_entry("kiln_library_load", [&]() -> kiln_status {
    if (!cache || !name || !out)
      return fail(kiln::make_error(kiln::Code::invalid_argument,
                                   "kiln_library_load: cache, name and out must not be NULL"));
    *out = nullptr;
    if (!g_caches.contains(cache)) [[unlikely]]
      return not_live("kiln_library_load", "cache", kiln::runtime::HandleType::cache);
    auto img = kiln::runtime::load(*cache, {name, target ? target : "", true});
    if (!img)
      return fail(img.error());
    *out = img.take().release();
    return KILN_OK;
  });
}

kiln_status kiln_image_lookup(kiln_image* image, const char* entry, void** out) {
  return kiln::runtime::c_entry("kiln_image_lookup", [&]() -> kiln_status {
    if (!image || !entry || !out) [[unlikely]]
      return fail(kiln::make_error(kiln::Code::invalid_argument,
                                   "kiln_image_lookup: image, entry and out must not be NULL"));
    if (!g_images.contains(image)) [[unlikely]] {
      *out = nullptr;
      return not_live("kiln_image_lookup", "image", kiln::runtime::HandleType::image);
    }
    void* found = image->find(std::string_view(entry));
    if (!found) [[unlikely]] {
      *out = nullptr;
      return fail(kiln::make_error(kiln::Code::not_found, std::string("no function '") + entry +
                                                              "' in the image of closure " +
                                                              image->closure.hex()));
    }
    *out = found;
    return KILN_OK;
  });
}

void* kiln_image_module(kiln_image* image) {
  if (!image)
    return nullptr;
  if (!g_images.contains(image)) [[unlikely]] {
    not_live("kiln_image_module", "image", kiln::runtime::HandleType::image);
    return nullptr;
  }
  return image->module ? image->module->handle() : nullptr;
}

const char* kiln_image_target(kiln_image* image) {
  if (!image)
    return "";
  if (!g_images.contains(image)) [[unlikely]] {
    not_live("kiln_image_target", "image", kiln::runtime::HandleType::image);
    return "";
  }
  return image->target.c_str();
}

void kiln_image_release(kiln_image* image) {
  if (!image)
    return;
  // As kiln_cache_close: one of two releases deletes, the other is told.
  if (!g_images.take(image)) {
    not_live("kiln_image_release", "image", kiln::runtime::HandleType::image);
    return;
  }
  image->registered = false;
  delete image;
}

const char* kiln_last_error(void) { return t_last_error.c_str(); }

const char* kiln_version(void) { return KILN_VERSION; }

int kiln_abi_version(void) { return KILN_SOVERSION_NUMBER; }
static_assert(KILN_ABI_VERSION == KILN_SOVERSION_NUMBER,
              "kiln.h's KILN_ABI_VERSION must be libkiln's soversion (KILN_SOVERSION)");

const char* kiln_status_name(kiln_status status) {
  switch (status) {
  case KILN_OK: return "KILN_OK";
  case KILN_NOT_FOUND: return "KILN_NOT_FOUND";
  case KILN_INVALID_ARGUMENT: return "KILN_INVALID_ARGUMENT";
  case KILN_UNAVAILABLE: return "KILN_UNAVAILABLE";
  case KILN_CORRUPT: return "KILN_CORRUPT";
  case KILN_INTERNAL: return "KILN_INTERNAL";
  }
  return "KILN_UNKNOWN_STATUS";
}

} // extern "C"

namespace kiln {

Result<void*> Image::lookup(std::string_view entry) const {
  void* found = img_->find(entry);
  if (!found)
    return make_error(Code::not_found, "no function '" + std::string(entry) +
                                           "' in the image of closure " + img_->closure.hex());
  return found;
}

Result<Cache> Cache::open(const std::string& path) { return open(path, 0); }

Result<Cache> Cache::open(const std::string& path, unsigned flags) {
  kiln_cache* c = nullptr;
  kiln_status st = kiln_cache_open_flags(path.empty() ? nullptr : path.c_str(), flags, &c);
  if (st != KILN_OK)
    return make_error(static_cast<Code>(st), t_last_error);
  return Cache(c);
}

Result<std::string> Cache::default_path() { return default_cache_path(); }

Result<Image> Cache::load(std::string_view name, std::string_view target) const {
  KILN_TRY_ASSIGN(auto img, runtime::load(*cache_, {name, target}));
  return Image(std::move(img).release());
}

Result<Image> Cache::load_library(std::string_view name, std::string_view target) const {
  KILN_TRY_ASSIGN(auto img, runtime::load(*cache_, {name, target, true}));
  return Image(std::move(img).release());
}

} // namespace kiln
