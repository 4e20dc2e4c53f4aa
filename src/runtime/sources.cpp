// The image sources a load tries in turn (sources.h), and how each reads
// the target a load given none takes.
#include "runtime/sources.h"

#include "core/check.h"
#include "core/keys.h"
#include "core/target.h"
#include "runtime/backend.h"
#include "runtime/host/host_select.h"
#include "support/hash.h"

#include <algorithm>
#include <atomic>

namespace kiln::runtime {

namespace {

// --- the target a load given none takes ------------------------------------

// The best of the targets `names` are recorded for (roots or libraries): the
// best one the cache has for this process's devices (an NVIDIA GPU, then an
// AMD GPU), else the best host build this CPU runs. With none that runs, a
// host target the cache has, so that the load says why it cannot run.
Result<std::string> choose_among(storage::Records& store,
                                 const std::vector<core::NameRecord>& names) {
  std::vector<std::string> have;
  std::vector<HostBuild> host_builds;
  for (const core::NameRecord& n : names) {
    have.push_back(n.target);
    if (!core::is_host_spec(n.target))
      continue;
    // A build whose closure or root job cannot be read is not chosen; a
    // load naming its target reports the damage.
    auto c = store.closures().get_closure(n.closure);
    auto job = c ? store.jobs().get_job(c->root_job) : Result<core::JobRecord>(c.error());
    if (job)
      host_builds.push_back({n.target, job->features});
  }
  for (const Backend& b : backends())
    if (b.kind != core::TargetKind::host)
      if (auto t = b.choose_target(have); t && !t->empty())
        return *t;
  if (std::string t = choose_host_build(host_builds); !t.empty())
    return t;
  KILN_TRY_ASSIGN(auto any_host, choose_host_target(have));
  return any_host.empty() ? std::string("host") : any_host;
}

// The target of a root (or, for a closure key, of its closure: names are
// never read for one).
Result<std::string> choose_target(storage::Records& store, std::string_view name) {
  if (is_hash128_hex(name)) {
    if (auto c = store.closures().get_closure(*parse_hash128(name)))
      return c->target;
    return choose_among(store, {});
  }
  KILN_TRY_ASSIGN(auto names, store.names().names_for(std::string(name)));
  return choose_among(store, names);
}

// The target chosen from the published images alone as choose_among would
// choose it: only where they hold every target the name has (none a
// GPU's, none left out). Empty where they cannot tell.
std::string published_target(const kiln_cache& cache, std::string_view name, bool library) {
  std::vector<std::string> have;
  std::vector<HostBuild> builds;
  for (const storage::PublishedRoot* r : cache.published->targets_of(name, library)) {
    if (!r->all_targets)
      return std::string();
    have.push_back(r->name.target);
    builds.push_back({r->name.target, cache.published->cpu(*r).features});
  }
  if (have.empty())
    return std::string();
  if (std::string t = choose_host_build(builds); !t.empty())
    return t;
  auto any_host = choose_host_target(have);
  return any_host && !any_host->empty() ? *any_host : std::string();
}

// --- another build of the same source ----------------------------------------

// What each member of a closure is, whatever CPU it was built for: its
// entry, module, options and target spec; sorted. Empty if a part is gone.
std::vector<std::string> member_sources(storage::Records& store, const core::ClosureRecord& c) {
  std::vector<std::string> out;
  for (const core::ClosureMember& m : c.members) {
    auto job = store.jobs().get_job(m.job);
    if (!job)
      return {};
    out.push_back(job->entry + '\n' + job->module_hash.hex() + '\n' + job->options + '\n' +
                  job->target);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Whether closure `other` is another build of `closure`'s source: the same
// functions, member for member (a child changed since is another source).
bool same_source(storage::Records& store, const core::ClosureRecord& closure,
                 const Hash128& other) {
  auto theirs = store.closures().get_closure(other);
  if (!theirs || theirs->members.size() != closure.members.size())
    return false;
  std::vector<std::string> a = member_sources(store, closure);
  return !a.empty() && a == member_sources(store, *theirs);
}

// A name names one closure per target, and "host" is whichever CPU
// precompiled it last: in a cache shared by machines with other CPUs it may
// be another machine's build. This CPU's build of the same source, where the
// cache holds one, is what the name means here: a closure whose every member
// is the same function (entry, module, options and target) as one of this
// closure's, built for another CPU. Loaded whole into `load`; false if none.
bool load_other_build(Load& load, storage::Records& store) {
  if (is_hash128_hex(load.request.name))
    return false;
  auto others = store.closures().other_builds(load.closure->root_job, 8);
  if (!others)
    return false;
  for (const Hash128& other : *others)
    if (same_source(store, *load.closure, other)) {
      std::string key = other.hex();
      if (auto img = runtime::load(load.cache, {key, load.target})) {
        load.image = img.take();
        return true;
      }
    }
  return false;
}

// --- what every closure passes ------------------------------------------------

// Whether the load's closure, from the store or the remote, may be loaded
// here: refused before any image is fetched, linked or loaded, since host
// code for a CPU with features this one lacks would die of SIGILL in the
// caller.
Status admit(Load& load) {
  const std::string name(load.request.name);
  const core::ClosureRecord& closure = *load.closure;
  if (closure.target != load.target)
    return make_error(Code::invalid_argument, "closure " + load.key.hex() + " is for target " +
                                                  closure.target + ", not " + load.target);
  if (!load.maker)
    return load.maker.error().context("loading '" + name + "'");
  const Backend& backend = backend_for(core::target_kind(load.target));
  if (!backend.check_job)
    return Status::ok();
  storage::Records& store = load.storage->records();
  Result<core::JobRecord> root = load.root_job ? Result<core::JobRecord>(std::move(*load.root_job))
                                               : store.jobs().get_job(closure.root_job);
  if (!root)
    return root.error().context("loading '" + name + "'");
  // The CPU and features the check reads are the ones the job's key names:
  // a damaged row must not weaken the check.
  KILN_TRY_ASSIGN(Hash128 recomputed, core::job_key_of(*root));
  if (!(recomputed == root->key))
    return make_error(Code::corrupt,
                      "the stored description of job " + root->key.hex() +
                          " (its target, CPU, features, options or toolchain) gives key " +
                          recomputed.hex() + ": its row is damaged, and '" + name +
                          "' is not loaded")
        .with_job(root->key.hex());
  if (Status runs = backend.check_job(*root); !runs) {
    if (load_other_build(load, store))
      return Status::ok();
    return runs.error().context("loading '" + name + "' (closure " + load.key.hex() + ")");
  }
  return Status::ok();
}

// --- the sources ----------------------------------------------------------------

// The image the warm set keeps for (name, target) under `stamp`, loaded again
// from its kept file with nothing read, into `load`; false if none is kept,
// or an image of that file is still loaded (the caller reads it anew).
bool reload_warm(Load& load, const std::string& name, const std::string& target,
                 const storage::DataStamp& stamp) {
  kiln_cache& cache = load.cache;
  auto warm = cache.warm.find(name, target, stamp);
  if (!warm)
    return false;
  auto img = std::make_unique<kiln_image>();
  auto mod = warm->file->load(warm->closure, img->symbols, &img->offsets, &img->base);
  if (!mod || !*mod)
    return false;
  img->module = mod.take();
  img->closure = warm->closure.key;
  img->target = warm->target;
  cache.warm.served();
  cache.record_load(warm->closure.key, false, warm->served_by ? &*warm->served_by : nullptr);
  load.image = std::move(img);
  return true;
}

// A host load the published images serve alone (storage/published/published.h): the
// root named for exactly this host target (or, given none, the one they can
// choose: published_target), built for a CPU this one runs, its image sound.
// They pass where they do not serve it (not published, a GPU target,
// another CPU's build, a changed or damaged file): the cache file is then
// read, and explains any refusal.
// A library is looked up among the libraries, and a closure key among every
// root's and library's closures; both are kept warm under the closure's key,
// as their loads through the cache file keep them (a key is never a root's
// name).
Status serve_published(Load& load) {
  kiln_cache& cache = load.cache;
  const storage::PublishedImages* published = cache.published.get();
  std::string_view name = load.request.name;
  // A commit since the open removed or replaced the file: it is old news.
  if (!published || core::target_kind(load.request.target) != core::TargetKind::host ||
      !published->current())
    return Status::ok();
  const bool by_key = is_hash128_hex(name);
  const bool library = load.request.library;
  std::string target(load.request.target);
  if (target.empty() && !by_key)
    target = published_target(cache, name, library);
  if (target.empty())
    return Status::ok();
  const storage::PublishedRoot* root =
      by_key    ? published->find_closure(*parse_hash128(name), target)
      : library ? published->find_library(name, target)
                : published->find(name, target);
  if (!root)
    return Status::ok();
  std::atomic<int8_t>& runs = cache.published_cpu_ok[root->cpu];
  if (runs.load(std::memory_order_relaxed) == 0)
    runs.store(backend_for(core::TargetKind::host).check_job(published->cpu(*root)) ? 1 : 2,
               std::memory_order_relaxed);
  if (runs.load(std::memory_order_relaxed) != 1)
    return Status::ok();
  // Kept images are tagged with this publication (the inode of its file).
  storage::DataStamp stamp{-2, int64_t(published->inode()), 0};
  std::string warm_name = library || by_key ? root->closure.key.hex() : std::string(name);
  if (reload_warm(load, warm_name, target, stamp))
    return Status::ok();
  core::ClosureRecord closure = published->closure_of(*root);
  auto bytes = published->image(*root);
  if (!bytes || !core::check_image(*bytes, closure))
    return Status::ok();
  load.target = target;
  load.warm_name = std::move(warm_name);
  load.warm_target = std::move(target);
  load.stamp = stamp;
  load.key = root->closure.key;
  load.closure = std::move(closure);
  load.bytes = bytes.take();
  if (!(root->image_of == root->closure.key))
    load.served_by = root->image_of;
  return Status::ok();
}

// A host image this handle loaded last, while the cache file is as it was
// then: loaded again from its sealed memory file, with nothing read. The
// stamp is taken before any read, so an image kept once loaded is tagged
// with a state no newer than the one it was read from. Only host images are
// kept: a load for a GPU target takes no stamp. A library's image is kept
// under its closure's key, by the load of that key.
Status serve_warm(Load& load) {
  KILN_TRY_ASSIGN(load.storage, load.cache.store());
  if (load.request.library || core::target_kind(load.request.target) != core::TargetKind::host)
    return Status::ok();
  auto stamp = load.storage->records().data_stamp();
  if (!stamp)
    return Status::ok();
  load.stamp = *stamp;
  load.warm_name = std::string(load.request.name);
  load.warm_target = std::string(load.request.target);
  reload_warm(load, load.warm_name, load.warm_target, *stamp);
  return Status::ok();
}

// A library's closure is a closure: the library (name, target; no target:
// the best match, as for a root) → its closure → loaded by its key.
Status serve_library(Load& load, storage::Records& store) {
  const std::string name(load.request.name);
  std::string target(load.request.target);
  if (target.empty()) {
    KILN_TRY_ASSIGN(auto libs, store.images().list_libraries(name));
    if (libs.empty())
      return make_error(Code::not_found,
                        "no library named '" + name + "' in cache '" + store.path() + "'");
    std::vector<core::NameRecord> names;
    for (const core::LibraryRecord& l : libs)
      names.push_back({l.name, l.target, l.closure});
    KILN_TRY_ASSIGN(target, choose_among(store, names));
  }
  auto lib = store.images().get_library(name, target);
  if (!lib)
    return lib.error().context("loading library '" + name + "'");
  std::string key = lib->closure.hex();
  auto img = runtime::load(load.cache, {key, target});
  if (!img)
    return img.error().context("loading library '" + name + "'");
  load.image = img.take();
  return Status::ok();
}

// The local store: the name, its closure, the members and a stored image,
// read in one transaction (a gc in another process between separate reads
// would leave a closure without members, which reads as damage). A name it
// lacks passes to the remote.
Status serve_store(Load& load) {
  storage::Records& store = load.storage->records();
  if (load.request.library)
    return serve_library(load, store);
  const std::string name(load.request.name);
  if (load.request.target.empty()) {
    KILN_TRY_ASSIGN(load.target, choose_target(store, name));
  } else {
    load.target = std::string(load.request.target);
  }
  // Where the present device needs images the linkers do not make (NVIDIA
  // code through the driver's JIT), no linked image is read. Without a
  // driver that is unknown, but a root the cache lacks is still not_found,
  // not unavailable: the device is reported only once the closure is there.
  const Backend& backend = backend_for(core::target_kind(load.target));
  if (backend.image_maker)
    load.maker = backend.image_maker(load.target, store);
  std::string arch = load.maker && *load.maker ? std::string() : core::image_arch(load.target);
  auto local = store.closures().read_root(name, load.target, arch, backend.check_job != nullptr);
  if (!local)
    return local.error().code == Code::not_found
               ? Status::ok()
               : Status(local.error().context("loading '" + name + "'"));
  load.key = local->closure.key;
  load.closure = std::move(local->closure);
  load.root_job = std::move(local->root);
  KILN_TRY(admit(load));
  if (!load.image && local->image && core::check_image(*local->image, *load.closure)) {
    load.bytes = std::move(*local->image);
    load.served_by = local->image_of;
  }
  return Status::ok();
}

// The remote tier, for what the local store lacks: a closure key names
// itself, and any other string is a root name the remote is asked for (it
// brings the name, its closure and the member jobs).
Status serve_remote(Load& load) {
  if (load.closure)
    return Status::ok();
  const std::string name(load.request.name);
  storage::Storage& storage = *load.storage;
  if (is_hash128_hex(name)) {
    load.key = *parse_hash128(name);
  } else {
    KILN_TRY_ASSIGN(load.key, storage.resolve_name(name, load.target));
  }
  auto closure = storage.get_closure(load.key);
  if (!closure)
    return closure.error().context("loading '" + name + "'");
  load.closure = closure.take();
  return admit(load);
}

// The image of a closure no source held: fetched from the remote, else
// linked from its jobs' artifacts (or made by the device's own maker: the
// CUDA driver's JIT of its PTX), checked and stored.
Status serve_link(Load& load) {
  Result<std::string> bytes =
      *load.maker ? image::fetch_or_make(load.storage->records(), *load.closure, **load.maker,
                                         &load.linked)
                  : image::fetch_or_link(*load.storage, *load.closure, &load.linked);
  if (!bytes)
    return bytes.error().context("loading '" + std::string(load.request.name) + "' for " +
                                 load.target);
  load.bytes = bytes.take();
  return Status::ok();
}

constexpr ImageSource kSources[] = {
    {"published", serve_published}, {"warm", serve_warm}, {"store", serve_store},
    {"remote", serve_remote},       {"link", serve_link},
};

} // namespace

std::span<const ImageSource> image_sources() { return kSources; }

} // namespace kiln::runtime
