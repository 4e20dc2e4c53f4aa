#include "runtime/loader.h"

#include "support/hash.h"

namespace kiln::runtime {

namespace {

// The target a NULL/empty target means. Device probing (CUDA, HIP) chooses
// a GPU target once those runtimes are present; the host is always there.
std::string default_target() { return "host"; }

Result<Hash128> resolve(cache::Store& store, std::string_view name, const std::string& target) {
  std::string n(name);
  auto by_name = store.resolve_name(n, target);
  if (by_name || by_name.error().code != Code::not_found || !is_hash128_hex(name))
    return by_name;
  return parse_hash128(name);
}

Result<std::string> relink(cache::Store& store, const cache::ClosureRecord& closure,
                           const cache::ImageKey& key) {
  std::vector<std::string> objects, names;
  for (const cache::ClosureMember& m : closure.members) {
    auto obj = store.get_artifact(m.job, "obj");
    if (!obj)
      return obj.error().context("relinking closure " + closure.key.hex() + " (entry " + m.entry +
                                 ")");
    objects.push_back(obj.take());
    names.push_back(m.job.hex());
  }
  auto image = link_host_image(objects, names);
  if (!image)
    return image.error().context("relinking closure " + closure.key.hex());
  // A store failure (read-only cache, disk full) costs the next process a
  // relink; it does not fail this load.
  (void)store.put_image(key, "so", *image);
  return image;
}

} // namespace

Result<std::unique_ptr<kiln_image>> load_image(kiln_cache& cache, std::string_view name,
                                               std::string_view target_arg) {
  if (name.empty())
    return make_error(Code::invalid_argument, "empty root name");
  std::string target = target_arg.empty() ? default_target() : std::string(target_arg);
  if (target != "host")
    return make_error(Code::unavailable, "target '" + target +
                                             "': this loader loads host images only");
  cache::Store& store = *cache.store;
  auto key = resolve(store, name, target);
  if (!key)
    return key.error();
  auto closure = store.get_closure(*key);
  if (!closure)
    return closure.error().context("loading '" + std::string(name) + "'");
  if (closure->target != target)
    return make_error(Code::invalid_argument, "closure " + key->hex() + " is for target " +
                                                  closure->target + ", not " + target);

  cache::ImageKey ikey{*key, host_arch(), host_linker_fingerprint()};
  auto bytes = store.get_image(ikey);
  if (!bytes && bytes.error().code != Code::not_found && bytes.error().code != Code::corrupt)
    return bytes.error();
  // A damaged image is a miss: relink it from the job artifacts, which carry
  // their own checksums.
  if (!bytes)
    bytes = relink(store, *closure, ikey);
  if (!bytes)
    return bytes.error();

  auto img = std::make_unique<kiln_image>();
  img->closure = *key;
  img->target = target;
  auto mod = load_host_image(*bytes, *closure, img->symbols);
  if (!mod)
    return mod.error();
  img->module = mod.take();
  return img;
}

} // namespace kiln::runtime
