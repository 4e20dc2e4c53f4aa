// libsqlite3, opened at the first cache file (storage/local/sqlite_api.h).
#define KILN_SQLITE_API_DEFINITION
#include "storage/local/sqlite_api.h"

#include "support/dynlib.h"

#include <mutex>

namespace kiln::storage {

SqliteApi g_sqlite;

Status load_sqlite() {
  static std::once_flag once;
  static Status loaded = Status::ok();
  std::call_once(once, [] {
    // The soname libsqlite3-dev links against; the same library a program
    // that links SQLite itself has already loaded (dlopen returns it).
    auto lib = open_library(KILN_SQLITE_SONAME, "opening a cache file");
    if (!lib) {
      loaded = lib.error();
      return;
    }
    std::string missing;
#define KILN_SQLITE_FN(name)                                                                   \
  if (!bind_symbol(*lib, #name, g_sqlite.name))                                               \
    missing += (missing.empty() ? "" : ", ") + std::string(#name);
#include "storage/local/sqlite_functions.inc"
#undef KILN_SQLITE_FN
    if (!missing.empty())
      loaded = make_error(Code::unavailable, std::string(KILN_SQLITE_SONAME) +
                                                 " lacks functions Kiln calls (" + missing +
                                                 "): SQLite 3.37 or newer is needed");
  });
  return loaded;
}

} // namespace kiln::storage
