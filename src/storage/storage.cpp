// Storage (storage/storage.h): the local cache and the remote together.
// Every remote value holds exactly one job, closure, name or image, and is
// checked before the local cache sees it: a value that fails is rejected
// (a notice, counted as an error) and left out, never fatal.
#include "storage/storage.h"

#include "core/check.h"
#include "core/keys.h"
#include "storage/bundle.h"
#include "storage/local/store.h"

#include <cstdio>
#include <set>

namespace kiln::storage {

Result<std::unique_ptr<Records>> open_records(const std::string& path, OpenMode mode) {
  KILN_TRY_ASSIGN(auto store, Store::open(path, mode));
  return std::unique_ptr<Records>(std::move(store));
}

Storage::Storage(std::unique_ptr<Records> local, remote::Remote remote, Signing signing)
    : owned_(std::move(local)), local_(owned_.get()), backend_(std::move(remote.backend)),
      options_(std::move(remote.options)), signing_(std::move(signing)) {}

Storage::Storage(Records& local) : local_(&local) {}

Storage::Storage(Records& local, remote::Remote remote, Signing signing)
    : local_(&local), backend_(std::move(remote.backend)), options_(std::move(remote.options)),
      signing_(std::move(signing)) {}

Storage::~Storage() { (void)close(); }

Status Storage::close() {
  if (closed_)
    return Status::ok();
  closed_ = true;
  {
    std::lock_guard lock(mu_);
    if (rejected_quietly_ > 0 && backend_)
      std::fprintf(stderr, "kiln: remote cache %s: rejected %lld more value%s (the last: %s)\n",
                   backend_->describe().c_str(), static_cast<long long>(rejected_quietly_),
                   rejected_quietly_ == 1 ? "" : "s", last_rejection_.c_str());
  }
  return owned_ ? owned_->close() : Status::ok();
}

Result<std::unique_ptr<Storage>> Storage::open(const std::string& path,
                                               const std::string& remote_url,
                                               bool remote_read_only, OpenMode mode) {
  KILN_TRY_ASSIGN(auto remote, remote::configured(remote_url, remote_read_only));
  KILN_TRY_ASSIGN(auto store, Store::open(path, mode));
  KILN_TRY_ASSIGN(auto signing, signing_of(*store, remote));
  return std::make_unique<Storage>(std::move(store), std::move(remote), std::move(signing));
}

Result<std::unique_ptr<Storage>> Storage::over(Records& local, remote::Remote remote) {
  KILN_TRY_ASSIGN(auto signing, signing_of(local, remote));
  return std::make_unique<Storage>(local, std::move(remote), std::move(signing));
}

Result<Signing> Storage::signing_of(Records& local, const remote::Remote& remote) {
  if (!remote.backend)
    return Signing{};
  return signing_for(local);
}

// --- read-through ----------------------------------------------------------

Result<Found> Storage::find_job(const Hash128& key, const std::vector<std::string>& formats) {
  KILN_TRY_ASSIGN(auto has, local_->jobs().has_job(key, formats));
  if (has)
    return Found::local;
  if (!backend_)
    return Found::nowhere;
  std::lock_guard lock(mu_);
  return fetch_job(key, formats) ? Found::remote : Found::nowhere;
}

Result<ClosureRecord> Storage::get_closure(const Hash128& key) {
  auto closure = local_->closures().get_closure(key);
  if (closure || closure.error().code != Code::not_found || !backend_)
    return closure;
  {
    std::lock_guard lock(mu_);
    if (!fetch_closure(key, {}))
      return closure;
  }
  return local_->closures().get_closure(key);
}

Result<Hash128> Storage::resolve_name(const std::string& name, const std::string& target) {
  auto key = local_->names().resolve_name(name, target);
  // A key-form string names no root here or in the remote (core::check_name).
  if (key || key.error().code != Code::not_found || !backend_ || is_hash128_hex(name))
    return key;
  std::lock_guard lock(mu_);
  if (auto fetched = fetch_name(name, target))
    return *fetched;
  return key;
}

Result<std::optional<std::string>> Storage::get_image(const ClosureRecord& closure,
                                                      const std::string& arch) {
  // Same key, same content: a stored image that fails its checks is
  // damaged, and is fetched or made again like a missing one.
  auto bytes = local_->images().get_image_any_linker(closure.key, arch);
  if (bytes) {
    if (core::check_image(*bytes, closure))
      return std::optional<std::string>(bytes.take());
  } else if (bytes.error().code != Code::not_found && bytes.error().code != Code::corrupt) {
    return bytes.error();
  }
  if (!backend_)
    return std::optional<std::string>();
  std::lock_guard lock(mu_);
  return fetch_image(closure, arch);
}

// --- write-back ------------------------------------------------------------

Status Storage::put_job(const JobRecord& job, const std::vector<Artifact>& artifacts,
                        const std::vector<JobRef>& refs) {
  KILN_TRY(local_->jobs().put_job(job, artifacts, refs));
  publish_job(job.key);
  return Status::ok();
}

Status Storage::put_image(const ImageKey& key, const std::string& format,
                          const std::string& bytes) {
  Status stored = local_->images().put_image(key, format, bytes);
  if (backend_)
    publish_image({key, format, bytes});
  return stored;
}

void Storage::publish_job(const Hash128& key) {
  std::lock_guard lock(mu_);
  if (!publishing())
    return;
  BundleData data;
  BundleData::Job j;
  auto rec = local_->jobs().get_job(key);
  auto infos = local_->jobs().artifact_infos(key);
  auto refs = local_->jobs().job_refs(key);
  if (!rec || !infos || !refs)
    return;
  j.record = rec.take();
  j.refs = refs.take();
  for (const ArtifactInfo& i : *infos) {
    auto bytes = local_->jobs().get_artifact(key, i.format);
    if (!bytes)
      return;
    j.artifacts.push_back({i.format, bytes.take()});
  }
  data.jobs.push_back(std::move(j));
  remote_put(remote_key("job", key.hex()), encode(data));
}

void Storage::publish_closure(const ClosureRecord& closure) {
  std::lock_guard lock(mu_);
  if (!publishing())
    return;
  BundleData data;
  data.closures.push_back(closure);
  for (ClosureMember& m : data.closures[0].members)
    m.entry.clear(); // filled on read; not part of what the key covers
  remote_put(remote_key("closure", closure.key.hex()), encode(data));
}

void Storage::publish_name(const NameRecord& name) {
  std::lock_guard lock(mu_);
  if (!publishing())
    return;
  BundleData data;
  data.names.push_back(name);
  remote_put(remote_key("name", remote_name_id(name.name, name.target)), encode(data));
}

void Storage::publish_image(const ImageRecord& image) {
  std::lock_guard lock(mu_);
  if (!publishing())
    return;
  BundleData data;
  data.images.push_back(image);
  remote_put(remote_key("image", image.key.closure.hex() + ":" + image.key.arch),
             encode(data));
}

void Storage::take_remote_counters(Counters& into) {
  std::lock_guard lock(mu_);
  into.remote_hits += counters_.remote_hits;
  into.remote_misses += counters_.remote_misses;
  into.remote_bytes_in += counters_.remote_bytes_in;
  into.remote_bytes_out += counters_.remote_bytes_out;
  into.remote_errors += counters_.remote_errors;
  counters_ = Counters();
}

std::string Storage::remote_key(const std::string& kind, const std::string& id) const {
  return options_.prefix + ":v" + std::to_string(kBundleVersion) + ":" + kind + ":" + id;
}

std::string Storage::encode(const BundleData& data) const {
  return encode_bundle(data, signing_.key ? &*signing_.key : nullptr);
}

std::string remote_name_id(const std::string& name, const std::string& target) {
  return hash128(target + '\0' + name).hex();
}

// --- leases -------------------------------------------------------------------

bool Storage::Leases::available() {
  std::lock_guard lock(s_.mu_);
  return s_.publishing() && s_.backend_->has_leases();
}

std::optional<bool> Storage::Leases::take(const Hash128& key, const std::string& holder,
                                          std::chrono::milliseconds term) {
  std::lock_guard lock(s_.mu_);
  if (!s_.publishing() || !s_.backend_->has_leases())
    return std::nullopt;
  auto taken = s_.backend_->take_lease(s_.remote_key("lease", key.hex()), holder, term);
  if (!taken) {
    s_.fail(taken.error().message);
    return std::nullopt;
  }
  return *taken;
}

std::optional<std::vector<bool>> Storage::Leases::renew(const std::vector<Hash128>& keys,
                                                        const std::string& holder,
                                                        std::chrono::milliseconds term) {
  std::lock_guard lock(s_.mu_);
  if (!s_.publishing() || !s_.backend_->has_leases())
    return std::nullopt;
  std::vector<std::string> remote_keys;
  for (const Hash128& k : keys)
    remote_keys.push_back(s_.remote_key("lease", k.hex()));
  auto held = s_.backend_->renew_leases(remote_keys, holder, term);
  if (!held) {
    s_.fail(held.error().message);
    return std::nullopt;
  }
  return held.take();
}

void Storage::Leases::release(const Hash128& key, const std::string& holder) {
  std::lock_guard lock(s_.mu_);
  if (!s_.publishing() || !s_.backend_->has_leases())
    return;
  if (Status st = s_.backend_->release_lease(s_.remote_key("lease", key.hex()), holder); !st)
    s_.fail(st.error().message);
}

// --- the remote, with mu_ held -----------------------------------------------

bool Storage::publishing() const { return backend_ && !options_.read_only && !disabled_; }

std::optional<std::string> Storage::remote_get(const std::string& key) {
  if (!backend_ || disabled_)
    return std::nullopt;
  auto value = backend_->get(key);
  if (!value) {
    fail(value.error().message);
    return std::nullopt;
  }
  if (!*value) {
    ++counters_.remote_misses;
    return std::nullopt;
  }
  counters_.remote_bytes_in += int64_t((*value)->size());
  return value.take();
}

void Storage::remote_put(const std::string& key, const std::string& value) {
  if (!publishing())
    return;
  if (Status s = backend_->put(key, value, options_.ttl); !s) {
    fail(s.error().message);
    return;
  }
  counters_.remote_bytes_out += int64_t(value.size());
}

void Storage::fail(const std::string& why) {
  ++counters_.remote_errors;
  if (!disabled_)
    std::fprintf(stderr,
                 "kiln: remote cache %s unavailable (%s); continuing with the local cache "
                 "only\n",
                 backend_->describe().c_str(), why.c_str());
  disabled_ = true;
}

void Storage::reject(const std::string& what, const std::string& why) {
  // One line for the first; the rest are counted, and summed up in one line
  // at the close: a poisoned remote must not bury the output.
  ++counters_.remote_errors;
  if (rejections_++ == 0) {
    std::fprintf(stderr,
                 "kiln: remote cache %s: rejected %s: %s (further rejections are counted and "
                 "reported once, at the close)\n",
                 backend_->describe().c_str(), what.c_str(), why.c_str());
    return;
  }
  ++rejected_quietly_;
  try {
    last_rejection_ = what + ": " + why;
  } catch (...) {
  }
}

std::optional<BundleData> Storage::fetch_one(const std::string& kind, const std::string& id,
                                             const std::string& what,
                                             const std::function<bool(const BundleData&)>& is_it) {
  auto value = remote_get(remote_key(kind, id));
  if (!value)
    return std::nullopt;
  auto data = decode_bundle(*value, signing_);
  if (!data) {
    reject(what, data.error().message);
    return std::nullopt;
  }
  size_t records =
      data->jobs.size() + data->closures.size() + data->images.size() + data->names.size();
  if (records != 1 || !is_it(*data)) {
    reject(what, "the value holds something else");
    return std::nullopt;
  }
  return std::move(*data);
}

bool Storage::fetch_job(const Hash128& key, const std::vector<std::string>& formats) {
  std::string what = "job " + key.hex();
  auto data = fetch_one("job", key.hex(), what, [&](const BundleData& d) {
    return d.jobs.size() == 1 && d.jobs[0].record.key == key;
  });
  if (!data)
    return false;
  // The job's key recomputed from its components, its deferred symbol, its
  // artifacts present: what an import checks.
  if (Status s = core::check_bundle(*data); !s) {
    reject(what, s.error().message);
    return false;
  }
  const BundleData::Job& j = data->jobs[0];
  std::set<std::string> have;
  for (const Artifact& a : j.artifacts)
    have.insert(a.format);
  for (const std::string& f : formats)
    if (!have.count(f)) {
      reject(what, "it lacks its " + f + " artifact");
      return false;
    }
  if (Status s = local_->jobs().put_job(j.record, j.artifacts, j.refs); !s)
    return false; // a local problem, not the remote's
  ++counters_.remote_hits;
  return true;
}

bool Storage::fetch_closure(const Hash128& key, const std::vector<NameRecord>& names) {
  std::string what = "closure " + key.hex();
  auto data = fetch_one("closure", key.hex(), what, [&](const BundleData& d) {
    return d.closures.size() == 1 && d.closures[0].key == key;
  });
  if (!data)
    return false;
  const ClosureRecord& c = data->closures[0];
  if (Status s = core::check_closure_key(c); !s) {
    reject(what, s.error().message);
    return false;
  }
  std::set<std::string> symbols;
  for (const ClosureMember& m : c.members)
    symbols.insert(m.symbol);
  for (const ClosureMember& m : c.members) {
    auto has = local_->jobs().has_job(m.job, {});
    if (!has)
      return false;
    if (!*has && !fetch_job(m.job, {}))
      return false; // a member nobody published: the closure is of no use yet
    auto job = local_->jobs().get_job(m.job);
    if (!job)
      return false;
    if (job->symbol != m.symbol || job->target != c.target) {
      reject(what, "member " + m.job.hex() + " defines another symbol or target");
      return false;
    }
    auto refs = local_->jobs().job_refs(m.job);
    if (!refs)
      return false;
    for (const JobRef& r : *refs)
      if (!symbols.count(r.symbol)) {
        reject(what, "it leaves " + r.symbol + " unresolved");
        return false;
      }
  }
  if (Status s = local_->closures().put_closure(c, names); !s)
    return false;
  ++counters_.remote_hits;
  return true;
}

std::optional<Hash128> Storage::fetch_name(const std::string& name, const std::string& target) {
  std::string what = "name " + name + " (" + target + ")";
  auto data = fetch_one("name", remote_name_id(name, target), what, [&](const BundleData& d) {
    return d.names.size() == 1 && d.names[0].name == name && d.names[0].target == target;
  });
  if (!data)
    return std::nullopt;
  ++counters_.remote_hits;
  Hash128 key = data->names[0].closure;
  if (auto have = local_->closures().get_closure(key)) {
    if (have->target != target) {
      reject(what, "it points at a closure for " + have->target);
      return std::nullopt;
    }
    if (!local_->closures().put_closure(*have, data->names))
      return std::nullopt;
    return key;
  }
  if (!fetch_closure(key, data->names))
    return std::nullopt;
  return key;
}

std::optional<std::string> Storage::fetch_image(const ClosureRecord& closure,
                                                const std::string& arch) {
  std::string what = "image of closure " + closure.key.hex() + " for " + arch;
  auto data = fetch_one("image", closure.key.hex() + ":" + arch, what, [&](const BundleData& d) {
    return d.images.size() == 1 && d.images[0].key.closure == closure.key &&
           d.images[0].key.arch == arch;
  });
  if (!data)
    return std::nullopt;
  ImageRecord& image = data->images[0];
  if (Status s = core::check_image(image.bytes, closure); !s) {
    reject(what, s.error().message);
    return std::nullopt;
  }
  (void)local_->images().put_image(image.key, image.format,
                                   image.bytes); // a read-only cache still loads it
  ++counters_.remote_hits;
  return std::move(image.bytes);
}

} // namespace kiln::storage
