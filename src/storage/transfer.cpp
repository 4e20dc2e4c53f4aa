// Export and import of bundle files.
#include "storage/transfer.h"

#include "storage/bundle.h"
#include "storage/catalog.h"
#include "storage/signing.h"

#include "core/check.h"
#include "support/compress.h"
#include "support/files.h"

#include <algorithm>
#include <map>

namespace kiln::storage {

Result<BundleSummary> export_bundle(Records& store, const std::string& path,
                                    const std::vector<std::string>& which) {
  // Renaming a bundle over the cache, or over its WAL, would destroy it.
  KILN_TRY(refuse_database_file(path, store.path(), "export destination"));
  std::vector<Hash128> keys;
  if (which.empty()) {
    KILN_TRY_ASSIGN(auto names, store.names().list_names());
    for (const NameRecord &n : names)
      keys.push_back(n.closure);
  } else {
    for (const std::string& w : which) {
      KILN_TRY_ASSIGN(auto names, store.names().names_for(w));
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

Result<BundleSummary> import_bundle(Records& store, const std::string& path) {
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
  KILN_TRY(store.upkeep().put_bundle(*data));
  return BundleSummary{data->closures.size(), data->jobs.size(), data->images.size(),
                       data->names.size(), 0};
}

} // namespace kiln::storage
