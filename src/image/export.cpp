// Writing a root's or a library's image to a file (kiln-inspect image,
// kiln-inspect library -o).
#include "image/export.h"

#include "image/image.h"
#include "support/files.h"

namespace kiln::image {

namespace {

Result<ExportedImage> write_image(storage::Records& store, const Hash128& key,
                                  const std::string& path) {
  // Renaming an image over the cache, or over its WAL, would destroy it.
  KILN_TRY(refuse_database_file(path, store.path(), "image destination"));
  KILN_TRY_ASSIGN(auto closure, store.closures().get_closure(key));
  storage::Storage local(store);
  KILN_TRY_ASSIGN(auto bytes, fetch_or_link(local, closure));
  KILN_TRY(write_file_atomic(path, bytes));
  return ExportedImage{std::move(closure), bytes.size()};
}

} // namespace

Result<ExportedImage> export_image(storage::Records& store, const std::string& what,
                                   const std::string& target, const std::string& path) {
  // A closure key names itself and is never read as a name (as the loader).
  Hash128 key;
  if (is_hash128_hex(what)) {
    key = *parse_hash128(what);
  } else {
    KILN_TRY_ASSIGN(key, store.names().resolve_name(what, target));
  }
  return write_image(store, key, path);
}

Result<ExportedImage> export_library_image(storage::Records& store, const std::string& name,
                                           const std::string& target, const std::string& path) {
  KILN_TRY_ASSIGN(auto lib, store.images().get_library(name, target));
  return write_image(store, lib.closure, path);
}

} // namespace kiln::image
