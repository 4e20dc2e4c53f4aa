#include "runtime/loader.h"

#include "core/target.h"
#include "runtime/backend.h"
#include "runtime/sources.h"
#include "runtime/warm.h"
#include "support/hash.h"

#include <kiln/kiln.h>

#include <algorithm>
#include <ctime>

namespace kiln::runtime {

namespace {

// The one ending of a load whose image a source gave as bytes: the
// target's backend loads them, and keeps what loads them again (the host's
// sealed memory file) where the load has a stamp to keep it under.
Result<std::unique_ptr<kiln_image>> load_bytes(Load& load) {
  auto img = std::make_unique<kiln_image>();
  img->closure = load.key;
  img->target = load.target;
  const Backend& backend = backend_for(core::target_kind(load.target));
  std::shared_ptr<KeptImage> kept;
  auto mod = backend.load(*load.bytes, *load.closure, img->symbols, load.stamp ? &kept : nullptr);
  if (!mod)
    return mod.error();
  img->module = mod.take();
  if (kept)
    load.cache.warm.keep(load.warm_name, load.warm_target, *load.stamp,
                         std::make_shared<const WarmImage>(WarmImage{
                             load.target, std::move(*load.closure), load.served_by,
                             std::move(kept)}));
  load.cache.record_load(load.key, load.linked, load.served_by ? &*load.served_by : nullptr);
  return img;
}

} // namespace

Result<std::unique_ptr<kiln_image>> load(kiln_cache& cache, LoadRequest request) {
  if (request.name.empty())
    return make_error(Code::invalid_argument,
                      request.library ? "empty library name" : "empty root name");
  // A key-form string is a closure key, for libraries as for roots: never a
  // library's name (none is recorded so), and a library's closure loads by it.
  if (request.library && is_hash128_hex(request.name))
    request.library = false;
  Load load{cache, request};
  for (const ImageSource& source : image_sources()) {
    if (Status served = source.serve(load); !served)
      return served.error();
    if (load.image)
      return std::move(load.image);
    if (load.bytes)
      return load_bytes(load);
  }
  return make_error(Code::internal, "no image source served '" + std::string(request.name) + "'");
}

Result<std::unique_ptr<kiln_image>> load_image(kiln_cache& cache, std::string_view name,
                                               std::string_view target) {
  return load(cache, {name, target});
}

} // namespace kiln::runtime

void kiln_cache::record_load(const kiln::Hash128& closure, bool linked,
                             const kiln::Hash128* image_of) {
  bool flush = false;
  {
    std::lock_guard lock(usage_mu);
    ++usage.loads;
    ++(linked ? usage.image_misses : usage.image_hits);
    used.push_back(closure);
    if (image_of && !(*image_of == closure))
      used.push_back(*image_of);
    flush = used.size() >= kFlushEvery;
  }
  if (flush)
    flush_usage();
}

void kiln_cache::flush_usage() {
  kiln::storage::Counters counts;
  std::vector<kiln::Hash128> closures;
  {
    std::lock_guard lock(usage_mu);
    std::swap(counts, usage);
    std::swap(closures, used);
  }
  std::sort(closures.begin(), closures.end());
  closures.erase(std::unique(closures.begin(), closures.end()), closures.end());
  kiln::storage::Storage* st = opened();
  if (!st) {
    // Every load was served by the published images: noted in the load log,
    // which the cache file takes in later, rather than a transaction here.
    // Not where the handle was opened read-only, as with the file.
    if (!published || closures.empty() || (flags & KILN_CACHE_READ_ONLY) ||
        !published->writable())
      return;
    std::vector<kiln::storage::LoadNote> notes;
    int64_t now = int64_t(std::time(nullptr));
    for (const kiln::Hash128& c : closures)
      notes.push_back({c, now, 0, 0});
    notes.front().loads = counts.loads;
    notes.front().image_hits = counts.image_hits;
    uint64_t size = 0;
    if (kiln::storage::append_load_log(path, published->cache_mode(), notes, &size) &&
        size >= kiln::storage::kLoadLogTakeIn)
      // Not to grow without bound while no writer comes: this process takes
      // the log in, once in some twenty thousand loads.
      if (auto file = store())
        (void)(*file)->records().upkeep().take_in_loads();
    return;
  }
  st->take_remote_counters(counts);
  if (counts.empty() && closures.empty())
    return;
  // Usage is advisory: a read-only or busy cache loses it, never a load.
  (void)st->records().upkeep().record_usage(closures, int64_t(std::time(nullptr)), counts);
}
