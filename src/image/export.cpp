// Writing a root's image to a file (kiln-inspect image).
#include "image/export.h"

#include "image/image.h"
#include "support/files.h"

namespace kiln::image {

Result<ExportedImage> export_image(storage::Store& store, const std::string& what,
                                   const std::string& target, const std::string& path) {
  Hash128 key;
  if (auto k = store.resolve_name(what, target); k) {
    key = *k;
  } else if (is_hash128_hex(what)) {
    key = *parse_hash128(what);
  } else {
    return k.error();
  }
  KILN_TRY_ASSIGN(auto closure, store.get_closure(key));
  storage::Storage local(store);
  KILN_TRY_ASSIGN(auto bytes, fetch_or_link(local, closure));
  KILN_TRY(write_file_atomic(path, bytes));
  return ExportedImage{std::move(closure), bytes.size()};
}

} // namespace kiln::image
