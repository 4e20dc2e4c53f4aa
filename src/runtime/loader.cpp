#include "runtime/loader.h"

#include "core/check.h"
#include "core/keys.h"
#include "core/target.h"
#include "image/image.h"
#include "runtime/backends.h"
#include "runtime/host/host_cpu.h"
#include "runtime/host/host_loader.h"
#include "runtime/host/host_select.h"
#include "runtime/warm.h"
#include "support/hash.h"

#include <kiln/kiln.h>

#include <algorithm>
#include <ctime>
#include <optional>

namespace kiln::runtime {

namespace {

// A closure key (32 hex digits, either case) names itself and is never
// read as a name, so no root can stand in for another's closure; any other
// string is a root name: one the local cache lacks is asked of the remote,
// which brings the name, its closure and the member jobs.
Result<Hash128> resolve(storage::Storage& storage, std::string_view name,
                        const std::string& target) {
  if (is_hash128_hex(name))
    return parse_hash128(name);
  return storage.resolve_name(std::string(name), target);
}

// The target a NULL/empty target means: the best one the cache has for this
// process's devices (an NVIDIA GPU, then an AMD GPU), else the best host
// build this CPU runs. With none that runs, a host target the cache has, so
// that the load says why it cannot run.
Result<std::string> choose_among(storage::Records& store, const std::vector<core::NameRecord>& names);

Result<std::string> choose_target(storage::Records& store, std::string_view name) {
  // A closure key: its closure's target (names are never read for one).
  if (is_hash128_hex(name)) {
    if (auto c = store.get_closure(*parse_hash128(name)))
      return c->target;
    return choose_among(store, {});
  }
  KILN_TRY_ASSIGN(auto names, store.names_for(std::string(name)));
  return choose_among(store, names);
}

// The best of the targets `names` are recorded for (roots or libraries).
Result<std::string> choose_among(storage::Records& store, const std::vector<core::NameRecord>& names) {
  std::vector<std::string> have;
  std::vector<HostBuild> host_builds;
  for (const core::NameRecord &n : names) {
    have.push_back(n.target);
    if (!core::is_host_spec(n.target))
      continue;
    // A build whose closure or root job cannot be read is not chosen; a
    // load naming its target reports the damage.
    auto c = store.get_closure(n.closure);
    auto job = c ? store.get_job(c->root_job) : Result<core::JobRecord>(c.error());
    if (job)
      host_builds.push_back({n.target, job->features});
  }
  for (const Backend &b : backends())
    if (b.kind != core::TargetKind::host)
      if (auto t = b.choose_target(have); t && !t->empty())
        return *t;
  if (std::string t = choose_host_build(host_builds); !t.empty())
    return t;
  KILN_TRY_ASSIGN(auto any_host, choose_host_target(have));
  return any_host.empty() ? std::string("host") : any_host;
}

} // namespace

namespace {

// What each member of a closure is, whatever CPU it was built for: its
// entry, module, options and target spec; sorted. Empty if a part is gone.
std::vector<std::string> member_sources(storage::Records& store, const core::ClosureRecord& c) {
  std::vector<std::string> out;
  for (const core::ClosureMember& m : c.members) {
    auto job = store.get_job(m.job);
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
bool same_source(storage::Records& store, const core::ClosureRecord& closure, const Hash128& other) {
  auto theirs = store.get_closure(other);
  if (!theirs || theirs->members.size() != closure.members.size())
    return false;
  std::vector<std::string> a = member_sources(store, closure);
  return !a.empty() && a == member_sources(store, *theirs);
}

} // namespace

namespace {

// The host image this handle kept for (name, target) under `stamp`, loaded
// again from its sealed memory file with nothing read; null if none is kept,
// or an image of that file is still loaded (the caller reads it anew).
std::unique_ptr<kiln_image> load_warm(kiln_cache& cache, const std::string& name,
                                      const std::string& target,
                                      const storage::DataStamp& stamp) {
  auto warm = cache.warm.find(name, target, stamp);
  if (!warm)
    return nullptr;
  auto img = std::make_unique<kiln_image>();
  auto mod = warm->file->load(warm->closure, img->symbols, &img->offsets, &img->base);
  if (!mod || !*mod)
    return nullptr;
  img->module = mod.take();
  img->closure = warm->closure.key;
  img->target = warm->target;
  cache.warm.served();
  cache.record_load(warm->closure.key, false, warm->served_by ? &*warm->served_by : nullptr);
  return img;
}

// The target a load given none takes, chosen from the published images
// alone as choose_among would choose it: only where they hold every target
// the name has (none a GPU's, none left out). Empty where they cannot tell.
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

// A host load the published images serve alone (storage/published.h): the
// root named for exactly this host target (or, given none, the one they can
// choose: published_target), built for a CPU this one runs, its image sound.
// Null where they do not serve it (not published, a GPU target, another
// CPU's build, a changed or damaged file): the full load then reads the
// cache file, and explains any refusal.
// A library is looked up among the libraries, and a closure key (key-form
// `name`) among every root's and library's closures; both are kept warm
// under the closure's key, as their loads through the cache file keep them
// (a key is never a root's name).
Result<std::unique_ptr<kiln_image>> load_published(kiln_cache& cache, std::string_view name,
                                                   std::string_view target_arg,
                                                   bool library = false) {
  const storage::PublishedImages* published = cache.published.get();
  // A commit since the open removed or replaced the file: it is old news.
  if (!published || core::target_kind(target_arg) != core::TargetKind::host ||
      !published->current())
    return std::unique_ptr<kiln_image>();
  const bool by_key = is_hash128_hex(name);
  std::string target(target_arg);
  if (target.empty() && !by_key)
    target = published_target(cache, name, library);
  if (target.empty())
    return std::unique_ptr<kiln_image>();
  const storage::PublishedRoot* root =
      by_key    ? published->find_closure(*parse_hash128(name), target)
      : library ? published->find_library(name, target)
                : published->find(name, target);
  if (!root)
    return std::unique_ptr<kiln_image>();
  std::atomic<int8_t>& runs = cache.published_cpu_ok[root->cpu];
  if (runs.load(std::memory_order_relaxed) == 0)
    runs.store(check_host_job(published->cpu(*root)) ? 1 : 2, std::memory_order_relaxed);
  if (runs.load(std::memory_order_relaxed) != 1)
    return std::unique_ptr<kiln_image>();
  const Hash128* served_by = root->image_of == root->closure.key ? nullptr : &root->image_of;
  // Kept images are tagged with this publication (the inode of its file).
  storage::DataStamp stamp{-2, int64_t(published->inode()), 0};
  std::string warm_name = library || by_key ? root->closure.key.hex() : std::string(name);
  if (auto img = load_warm(cache, warm_name, target, stamp))
    return img;
  core::ClosureRecord closure = published->closure_of(*root);
  auto bytes = published->image(*root);
  if (!bytes || !core::check_image(*bytes, closure))
    return std::unique_ptr<kiln_image>();
  auto img = std::make_unique<kiln_image>();
  img->closure = root->closure.key;
  img->target = target;
  std::shared_ptr<HostImageFile> file;
  KILN_TRY_ASSIGN(auto mod, load_host_image(*bytes, closure, img->symbols, &file));
  img->module = std::move(mod);
  cache.warm.keep(warm_name, target, stamp,
                  std::make_shared<const WarmImage>(WarmImage{
                      target, closure,
                      served_by ? std::optional<Hash128>(*served_by) : std::nullopt,
                      std::move(file)}));
  cache.record_load(root->closure.key, false, served_by);
  return img;
}

} // namespace

Result<std::unique_ptr<kiln_image>> load_image(kiln_cache& cache, std::string_view name,
                                               std::string_view target_arg) {
  if (name.empty())
    return make_error(Code::invalid_argument, "empty root name");
  KILN_TRY_ASSIGN(auto published, load_published(cache, name, target_arg));
  if (published)
    return published;
  KILN_TRY_ASSIGN(storage::Storage * opened, cache.store());
  storage::Storage& storage = *opened;
  storage::Records& store = storage.records();
  // A host image this handle loaded last, while the file is as it was then:
  // loaded again from its sealed memory file, with nothing read. The stamp
  // is taken before any read, so an image kept below is tagged with a state
  // no newer than the one it was read from.
  // Only host images are kept: a load for a GPU target takes no stamp.
  std::string warm_name(name), warm_target(target_arg);
  Result<storage::DataStamp> stamp = make_error(Code::unavailable, "no warm images for GPUs");
  if (core::target_kind(target_arg) == core::TargetKind::host)
    stamp = store.data_stamp();
  if (stamp)
    if (auto img = load_warm(cache, warm_name, warm_target, *stamp))
      return img;
  std::string target;
  if (target_arg.empty()) {
    KILN_TRY_ASSIGN(auto t, choose_target(store, name));
    target = t;
  } else {
    target = std::string(target_arg);
  }
  // The name, its closure, the members and a stored image, read in one
  // transaction: a gc in another process between separate reads would
  // leave a closure without members, which reads as damage. Only what the
  // local cache lacks goes through storage (the remote tier).
  // Whether NVIDIA code goes through the driver's JIT decides which image
  // arch to read. Without a driver that is unknown, but a root the cache
  // lacks is still not_found, not unavailable: report the driver only once
  // the closure is there.
  Result<bool> jit = false;
  if (core::target_kind(target) == core::TargetKind::nvptx)
    jit = cuda_needs_jit(target);
  bool jit_image = jit && *jit;
  std::string arch = jit_image ? std::string() : core::image_arch(target);
  Hash128 key;
  Result<core::ClosureRecord> closure = make_error(Code::internal, "unread");
  std::optional<std::string> stored_image;
  std::optional<Hash128> image_of; ///< whose image row stored_image is
  std::optional<core::JobRecord> root_job;
  const Backend& backend = backend_for(core::target_kind(target));
  auto local = store.read_root(std::string(name), target, arch, backend.check_job != nullptr);
  if (local) {
    key = local->closure.key;
    closure = std::move(local->closure);
    stored_image = std::move(local->image);
    image_of = local->image_of;
    root_job = std::move(local->root);
  } else if (local.error().code == Code::not_found) {
    KILN_TRY_ASSIGN(auto k, resolve(storage, name, target));
    key = k;
    closure = storage.get_closure(key);
  } else {
    closure = local.error();
  }
  if (!closure)
    return closure.error().context("loading '" + std::string(name) + "'");
  if (closure->target != target)
    return make_error(Code::invalid_argument, "closure " + key.hex() + " is for target " +
                                                  closure->target + ", not " + target);
  if (!jit)
    return jit.error().context("loading '" + std::string(name) + "'");
  // Refused before any image is fetched, linked or loaded: host code for a
  // CPU with features this one lacks would die of SIGILL in the caller.
  if (backend.check_job) {
    Result<core::JobRecord> root = root_job ? Result<core::JobRecord>(std::move(*root_job))
                                            : store.get_job(closure->root_job);
    if (!root)
      return root.error().context("loading '" + std::string(name) + "'");
    // The CPU and features the check reads are the ones the job's key
    // names: a damaged row must not weaken the check.
    KILN_TRY_ASSIGN(Hash128 recomputed, core::job_key_of(*root));
    if (!(recomputed == root->key))
      return make_error(Code::corrupt,
                        "the stored description of job " + root->key.hex() +
                            " (its target, CPU, features, options or toolchain) gives key " +
                            recomputed.hex() + ": its row is damaged, and '" +
                            std::string(name) + "' is not loaded")
          .with_job(root->key.hex());
    if (Status runs = backend.check_job(*root); !runs) {
      // A name names one closure per target, and "host" is whichever CPU
      // precompiled it last: in a cache shared by machines with other CPUs
      // it may be another machine's build. This CPU's build of the same
      // source, where the cache holds one, is what the name means here:
      // a closure whose every member is the same function (entry, module,
      // options and target) as one of this closure's, built for another CPU.
      if (!is_hash128_hex(name))
        if (auto others = store.other_builds(closure->root_job, 8))
          for (const Hash128& other : *others)
            if (same_source(store, *closure, other))
              if (auto img = load_image(cache, other.hex(), target))
                return img;
      return runs.error().context("loading '" + std::string(name) + "' (closure " + key.hex() +
                                  ")");
    }
  }

  Result<std::string> bytes = make_error(Code::internal, "no image");
  bool linked = false;
  const Hash128* served_by = nullptr;
  if (stored_image && core::check_image(*stored_image, *closure)) {
    bytes = std::move(*stored_image);
    served_by = image_of ? &*image_of : nullptr;
  } else if (jit_image) {
    // A cubin for another major (or another 'a' arch) does not run here; its
    // PTX may, through the driver's JIT.
    bytes = cuda_jit_image(store, *closure, &linked);
  } else {
    bytes = image::fetch_or_link(storage, *closure, &linked);
  }
  if (!bytes)
    return bytes.error().context("loading '" + std::string(name) + "' for " + target);

  auto img = std::make_unique<kiln_image>();
  img->closure = key;
  img->target = target;
  if (backend.kind == core::TargetKind::host) {
    // The host backend's load, with its memory file kept for the next one.
    std::shared_ptr<HostImageFile> file;
    KILN_TRY_ASSIGN(auto mod, load_host_image(*bytes, *closure, img->symbols, &file));
    img->module = std::move(mod);
    if (stamp)
      cache.warm.keep(warm_name, warm_target, *stamp,
                      std::make_shared<const WarmImage>(WarmImage{
                          target, *closure,
                          served_by ? std::optional<Hash128>(*served_by) : std::nullopt,
                          std::move(file)}));
  } else {
    KILN_TRY_ASSIGN(auto mod, backend.load(*bytes, *closure, img->symbols));
    img->module = std::move(mod);
  }
  cache.record_load(key, linked, served_by);
  return img;
}

Result<std::unique_ptr<kiln_image>> load_library(kiln_cache& cache, std::string_view name,
                                                 std::string_view target_arg) {
  if (name.empty())
    return make_error(Code::invalid_argument, "empty library name");
  // A key-form string is a closure key, for libraries as for roots: never a
  // library's name (none is recorded so), and a library's closure loads by it.
  if (is_hash128_hex(name))
    return load_image(cache, name, target_arg);
  KILN_TRY_ASSIGN(auto published, load_published(cache, name, target_arg, true));
  if (published)
    return published;
  KILN_TRY_ASSIGN(storage::Storage * opened, cache.store());
  storage::Records& store = opened->records();
  std::string target(target_arg);
  if (target.empty()) {
    KILN_TRY_ASSIGN(auto libs, store.list_libraries(std::string(name)));
    if (libs.empty())
      return make_error(Code::not_found, "no library named '" + std::string(name) +
                                             "' in cache '" + store.path() + "'");
    std::vector<core::NameRecord> names;
    for (const core::LibraryRecord& l : libs)
      names.push_back({l.name, l.target, l.closure});
    KILN_TRY_ASSIGN(auto t, choose_among(store, names));
    target = t;
  }
  auto lib = store.get_library(std::string(name), target);
  if (!lib)
    return lib.error().context("loading library '" + std::string(name) + "'");
  // A library's closure is a closure: the same load, its image the one
  // image of all the roots' kernels.
  auto img = load_image(cache, lib->closure.hex(), target);
  if (!img)
    return img.error().context("loading library '" + std::string(name) + "'");
  return img;
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
        (void)(*file)->records().take_in_loads();
    return;
  }
  st->take_remote_counters(counts);
  if (counts.empty() && closures.empty())
    return;
  // Usage is advisory: a read-only or busy cache loses it, never a load.
  (void)st->records().record_usage(closures, int64_t(std::time(nullptr)), counts);
}
