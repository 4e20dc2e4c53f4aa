// Each closure is asked what a load would ask, in the loader's order: the
// root job runs on this CPU or device (Backend::check_job, choose_target),
// then a stored image for this machine's arch or a linker to make one.
#include "runtime/portable.h"

#include "core/check.h"
#include "core/target.h"
#include "image/image.h"
#include "runtime/backend.h"
#include "runtime/host/host_cpu_check.h"
#include "storage/bundle.h"
#include "storage/signing.h"
#include "support/compress.h"
#include "support/files.h"

#include <algorithm>
#include <functional>
#include <map>

namespace kiln::runtime {

namespace {

struct Sources {
  std::function<const core::JobRecord*(const Hash128&)> job;
  std::function<bool(const Hash128&, const std::string&)> has_image;
};

ClosurePortability check_one(const core::ClosureRecord& c, const Sources& src) {
  ClosurePortability p;
  p.closure = c.key;
  p.target = c.target;
  core::TargetKind kind = core::target_kind(c.target);
  const Backend& backend = backend_for(kind);
  const core::JobRecord* root = src.job(c.root_job);
  if (!root) {
    p.component = "record";
    p.reason = "root job " + c.root_job.hex() + " is missing";
    return p;
  }
  p.cpu = root->cpu;
  if (kind == core::TargetKind::host) {
    core::CpuGap gap = host_cpu_gap(*root);
    if (!gap.runs()) {
      p.component = "cpu";
      p.missing = gap.missing;
      p.unknown = gap.unknown;
      p.reason = check_host_job(*root).error().message;
      return p;
    }
  } else {
    auto device = backend.device_target();
    if (!device) {
      p.component = "gpu";
      p.reason = "no " + std::string(backend.name) + " device: " + device.error().message;
      return p;
    }
    auto fits = backend.choose_target({c.target});
    if (!fits || fits->empty()) {
      p.component = "gpu";
      p.reason = "the " + std::string(backend.name) + " device here is " + *device + "; code for " +
                 c.target + " does not run on it";
      return p;
    }
  }
  if (!src.has_image(c.key, core::image_arch(c.target))) {
    auto fp = image::linker_fingerprint(c.target);
    if (!fp) {
      p.component = "linker";
      p.reason = "no stored image for " + core::image_arch(c.target) +
                 " and no toolchain to link one: " + fp.error().message;
      return p;
    }
  }
  p.loadable = true;
  return p;
}

PortabilityReport run(const std::vector<core::ClosureRecord>& closures,
                      const std::vector<core::NameRecord>& names, const Sources& src) {
  PortabilityReport r;
  std::map<Hash128, std::vector<std::string>> by_closure;
  for (const core::NameRecord& n : names)
    by_closure[n.closure].push_back(n.name);
  for (const core::ClosureRecord& c : closures) {
    ClosurePortability p = check_one(c, src);
    p.names = by_closure[c.key];
    std::sort(p.names.begin(), p.names.end());
    r.loadable += p.loadable;
    r.closures.push_back(std::move(p));
  }
  std::sort(r.closures.begin(), r.closures.end(), [](const auto& a, const auto& b) {
    return a.target != b.target ? a.target < b.target : a.closure.hex() < b.closure.hex();
  });
  return r;
}

} // namespace

Result<PortabilityReport> check_portable(storage::Records& store) {
  KILN_TRY_ASSIGN(auto closures, store.closures().list_closures());
  KILN_TRY_ASSIGN(auto names, store.names().list_names());
  KILN_TRY_ASSIGN(auto jobs, store.jobs().list_jobs());
  std::map<Hash128, core::JobRecord> by_key;
  for (core::JobRecord& j : jobs)
    by_key.emplace(j.key, std::move(j));
  Sources src{[&](const Hash128& k) -> const core::JobRecord* {
                auto it = by_key.find(k);
                return it == by_key.end() ? nullptr : &it->second;
              },
              [&](const Hash128& closure, const std::string& arch) {
                return bool(store.images().get_image_any_linker(closure, arch));
              }};
  return run(closures, names, src);
}

PortabilityReport check_portable(const core::BundleData& bundle) {
  std::map<Hash128, const core::JobRecord*> by_key;
  for (const core::BundleData::Job& j : bundle.jobs)
    by_key.emplace(j.record.key, &j.record);
  Sources src{[&](const Hash128& k) -> const core::JobRecord* {
                auto it = by_key.find(k);
                return it == by_key.end() ? nullptr : it->second;
              },
              [&](const Hash128& closure, const std::string& arch) {
                return std::any_of(bundle.images.begin(), bundle.images.end(),
                                   [&](const core::ImageRecord& i) {
                                     return i.key.closure == closure && i.key.arch == arch;
                                   });
              }};
  return run(bundle.closures, bundle.names, src);
}

Result<PortabilityReport> check_bundle_portable(storage::Records* store, const std::string& path) {
  KILN_TRY_ASSIGN(auto signing,
                  store ? storage::signing_for(*store) : storage::signing_from_env());
  if (store)
    KILN_TRY(refuse_database_file(path, store->path(), "bundle"));
  KILN_TRY_ASSIGN(auto bytes, read_file(path, max_encoded_size()));
  auto data = storage::decode_bundle(bytes, signing);
  if (!data)
    return data.error().context("'" + path + "'");
  if (Status s = core::check_bundle(*data); !s)
    return s.error().context("'" + path + "'");
  return check_portable(*data);
}

} // namespace kiln::runtime
