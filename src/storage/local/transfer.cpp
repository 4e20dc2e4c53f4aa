// Export and import of bundle files, and the one transaction that writes a
// bundle's rows.
#include "storage/local/transfer.h"

#include "storage/bundle.h"
#include "storage/local/catalog.h"
#include "storage/local/statement.h"
#include "storage/signing.h"

#include "core/check.h"
#include "support/compress.h"
#include "support/files.h"

#include <algorithm>
#include <map>

namespace kiln::storage {

Status Store::put_bundle(const BundleData& data) {
  // Bundles carry raw bytes: each blob is compressed here with this cache's
  // dictionary for its kind, if it has one.
  std::map<std::string, std::shared_ptr<const Dictionary>> dicts;
  {
    std::lock_guard lock(mu_);
    auto want = [&](const std::string& kind) {
      if (!dicts.count(kind))
        dicts[kind] = writing_dictionary(kind);
    };
    for (const BundleData::Job& j : data.jobs)
      for (const Artifact& a : j.artifacts)
        want("artifact " + a.format);
    for (const ImageRecord& i : data.images)
      want("image " + i.format);
  }
  std::vector<std::vector<Packed>> packed_jobs;
  for (const BundleData::Job& j : data.jobs) {
    std::vector<Packed> packed;
    for (const Artifact& a : j.artifacts)
      packed.push_back(pack_with(dicts["artifact " + a.format].get(), a.bytes));
    packed_jobs.push_back(std::move(packed));
  }
  std::vector<Packed> packed_images;
  for (const ImageRecord& i : data.images)
    packed_images.push_back(pack_with(dicts["image " + i.format].get(), i.bytes));
  std::lock_guard lock(mu_);
  int64_t now = now_seconds();
  return transaction([&]() -> Status {
    for (size_t i = 0; i < data.jobs.size(); ++i)
      KILN_TRY(insert_job_rows(data.jobs[i].record, data.jobs[i].artifacts, packed_jobs[i],
                               data.jobs[i].refs));
    std::map<std::string, std::vector<NameRecord>> names;
    for (const NameRecord& n : data.names)
      names[n.closure.hex()].push_back(n);
    for (const ClosureRecord& c : data.closures)
      KILN_TRY(insert_closure_rows(c, names[c.key.hex()], now));
    for (size_t i = 0; i < data.images.size(); ++i)
      KILN_TRY(insert_image_row(data.images[i], packed_images[i]));
    return Status::ok();
  });
}

Result<BundleSummary> export_bundle(Store& store, const std::string& path,
                                    const std::vector<std::string>& which) {
  // Renaming a bundle over the cache, or over its WAL, would destroy it.
  KILN_TRY(refuse_database_file(path, store.path(), "export destination"));
  std::vector<Hash128> keys;
  if (which.empty()) {
    KILN_TRY_ASSIGN(auto names, store.list_names());
    for (const NameRecord &n : names)
      keys.push_back(n.closure);
  } else {
    for (const std::string& w : which) {
      KILN_TRY_ASSIGN(auto names, store.names_for(w));
      for (const NameRecord &n : names)
        keys.push_back(n.closure);
      if (names.empty()) {
        KILN_TRY_ASSIGN(auto k, resolve_closure(store, w, ""));
        keys.push_back(k);
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  KILN_TRY_ASSIGN(auto signing, signing_for(store));
  // A cache that requires signatures would refuse its own bundle: say so
  // here rather than write one every such cache refuses.
  if (signing.required && !signing.key)
    return make_error(Code::invalid_argument,
                      "signatures are required (KILN_REQUIRE_SIGNED or the cache's "
                      "require_signed setting), but KILN_SIGNING_KEY is not set: an unsigned "
                      "bundle would be refused by every cache that requires them");
  KILN_TRY_ASSIGN(auto data, collect_bundle(store, keys));
  std::string bytes = encode_bundle(data, signing.key ? &*signing.key : nullptr);
  KILN_TRY(write_file_atomic(path, bytes));
  return BundleSummary{data.closures.size(), data.jobs.size(), data.images.size(),
                       data.names.size(), bytes.size()};
}

Result<BundleSummary> import_bundle(Store& store, const std::string& path) {
  // Checked before the file is opened: closing a descriptor of the cache
  // would drop this process's SQLite locks on it.
  KILN_TRY(refuse_database_file(path, store.path(), "import source"));
  KILN_TRY_ASSIGN(auto signing, signing_for(store));
  // No bundle over the decoded maximum can be valid: not read at all.
  KILN_TRY_ASSIGN(auto bytes, read_file(path, max_encoded_size()));
  // Decode and validate everything first: a damaged, hostile or (where
  // signatures are required) unsigned bundle changes nothing.
  auto data = decode_bundle(bytes, signing);
  if (!data)
    return data.error().context("'" + path + "'");
  if (Status s = core::check_bundle(*data); !s)
    return s.error().context("'" + path + "'");
  KILN_TRY(store.put_bundle(*data));
  return BundleSummary{data->closures.size(), data->jobs.size(), data->images.size(),
                       data->names.size(), 0};
}

} // namespace kiln::storage
