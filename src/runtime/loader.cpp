#include "runtime/loader.h"

#include "core/target.h"
#include "image/image.h"
#include "runtime/backends.h"
#include "support/hash.h"

#include <algorithm>
#include <ctime>

namespace kiln::runtime {

namespace {

Result<Hash128> resolve(storage::Store& store, std::string_view name, const std::string& target) {
  std::string n(name);
  auto by_name = store.resolve_name(n, target);
  if (by_name || by_name.error().code != Code::not_found || !is_hash128_hex(name))
    return by_name;
  return parse_hash128(name);
}

// The target a NULL/empty target means: the best one the cache has for this
// process's devices (an NVIDIA GPU, then an AMD GPU), else the host.
Result<std::string> choose_target(storage::Store& store, std::string_view name) {
  std::vector<std::string> have;
  if (is_hash128_hex(name)) {
    auto c = store.get_closure(*parse_hash128(name));
    if (c)
      return c->target;
  }
  auto names = store.names_for(std::string(name));
  if (!names)
    return names.error();
  for (const core::NameRecord& n : *names)
    have.push_back(n.target);
  if (auto nv = choose_cuda_target(have); nv && !nv->empty())
    return *nv;
  if (auto amd = choose_hip_target(have); amd && !amd->empty())
    return *amd;
  return std::string("host");
}

} // namespace

Result<std::unique_ptr<kiln_image>> load_image(kiln_cache& cache, std::string_view name,
                                               std::string_view target_arg) {
  if (name.empty())
    return make_error(Code::invalid_argument, "empty root name");
  storage::Store& store = *cache.store;
  std::string target;
  if (target_arg.empty()) {
    auto t = choose_target(store, name);
    if (!t)
      return t.error();
    target = *t;
  } else {
    target = std::string(target_arg);
  }
  auto key = resolve(store, name, target);
  // A local miss asks the shared tier, which brings the name, its closure and
  // the member jobs into the local cache.
  if (!key && key.error().code == Code::not_found && cache.remote)
    if (auto fetched = cache.remote->fetch_name(store, std::string(name), target))
      key = *fetched;
  if (!key)
    return key.error();
  auto closure = store.get_closure(*key);
  if (!closure && closure.error().code == Code::not_found && cache.remote &&
      cache.remote->fetch_closure(store, *key))
    closure = store.get_closure(*key);
  if (!closure)
    return closure.error().context("loading '" + std::string(name) + "'");
  if (closure->target != target)
    return make_error(Code::invalid_argument, "closure " + key->hex() + " is for target " +
                                                  closure->target + ", not " + target);

  Result<std::string> bytes = make_error(Code::internal, "no image");
  bool linked = false;
  if (core::target_kind(target) == core::TargetKind::nvptx) {
    // A cubin for another major (or another 'a' arch) does not run here; its
    // PTX may, through the driver's JIT.
    auto jit = cuda_needs_jit(target);
    if (!jit)
      return jit.error().context("loading '" + std::string(name) + "'");
    bytes = *jit ? cuda_jit_image(store, *closure, &linked)
                 : image::fetch_or_link(store, *closure, &linked, cache.remote.get());
  } else {
    bytes = image::fetch_or_link(store, *closure, &linked, cache.remote.get());
  }
  if (!bytes)
    return bytes.error().context("loading '" + std::string(name) + "' for " + target);

  auto img = std::make_unique<kiln_image>();
  img->closure = *key;
  img->target = target;
  Result<std::unique_ptr<LoadedModule>> mod = make_error(Code::internal, "no loader");
  switch (core::target_kind(target)) {
  case core::TargetKind::host:
    mod = load_host_image(*bytes, *closure, img->symbols);
    break;
  case core::TargetKind::nvptx:
    mod = load_cuda_image(*bytes, *closure, img->symbols);
    break;
  case core::TargetKind::amdgpu:
    mod = load_hip_image(*bytes, *closure, img->symbols);
    break;
  }
  if (!mod)
    return mod.error();
  img->module = mod.take();
  cache.record_load(*key, linked);
  return img;
}

} // namespace kiln::runtime

void kiln_cache::record_load(const kiln::Hash128& closure, bool linked) {
  bool flush = false;
  {
    std::lock_guard lock(usage_mu);
    ++usage.loads;
    ++(linked ? usage.image_misses : usage.image_hits);
    used.push_back(closure);
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
  if (remote) {
    kiln::storage::Counters r = remote->take_counters();
    counts.remote_hits += r.remote_hits;
    counts.remote_misses += r.remote_misses;
    counts.remote_bytes_in += r.remote_bytes_in;
    counts.remote_bytes_out += r.remote_bytes_out;
    counts.remote_errors += r.remote_errors;
  }
  if (!store || (counts.empty() && closures.empty()))
    return;
  // Usage is advisory: a read-only or busy cache loses it, never a load.
  std::sort(closures.begin(), closures.end());
  closures.erase(std::unique(closures.begin(), closures.end()), closures.end());
  (void)store->touch_closures(closures, int64_t(std::time(nullptr)));
  (void)store->add_counters(counts);
}
