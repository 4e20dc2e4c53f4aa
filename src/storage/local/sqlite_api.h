// SQLite as the cache file's database part calls it: through a table of its
// functions, filled when the first cache file is opened (load_sqlite), not
// through libkiln's own imports. libsqlite3 and the libm it needs are then
// mapped and relocated only by a process that opens a cache file through
// SQLite: one that loads a published image (storage/published/published.h) never maps
// them (about 0.2-0.3 ms of a 0.5 ms bare process here).
//
// Files of this part include this header instead of <sqlite3.h>; compiled
// into the storage layer (KILN_SQLITE_TABLE), each sqlite3_* call below then
// goes through the table. A direct include of <sqlite3.h> there that calls
// SQLite fails to link libkiln, which links no SQLite. Elsewhere (a test that
// includes these headers and links SQLite itself) the names are SQLite's own.
#pragma once

#include <sqlite3.h>

#include <kiln/result.hpp>

namespace kiln::storage {

/// The functions, bound by load_sqlite().
struct SqliteApi {
#define KILN_SQLITE_FN(name) decltype(&::name) name = nullptr;
#include "storage/local/sqlite_functions.inc"
#undef KILN_SQLITE_FN
};
extern SqliteApi g_sqlite;

/// Opens libsqlite3 and binds every function, once per process; an
/// unavailable error naming the library and what is missing otherwise.
/// Database::open calls it first, so every other call finds the table filled.
Status load_sqlite();

} // namespace kiln::storage

#if defined(KILN_SQLITE_TABLE) && !defined(KILN_SQLITE_API_DEFINITION)
#define sqlite3_bind_blob (::kiln::storage::g_sqlite.sqlite3_bind_blob)
#define sqlite3_bind_double (::kiln::storage::g_sqlite.sqlite3_bind_double)
#define sqlite3_bind_int64 (::kiln::storage::g_sqlite.sqlite3_bind_int64)
#define sqlite3_bind_null (::kiln::storage::g_sqlite.sqlite3_bind_null)
#define sqlite3_bind_text (::kiln::storage::g_sqlite.sqlite3_bind_text)
#define sqlite3_busy_timeout (::kiln::storage::g_sqlite.sqlite3_busy_timeout)
#define sqlite3_changes (::kiln::storage::g_sqlite.sqlite3_changes)
#define sqlite3_clear_bindings (::kiln::storage::g_sqlite.sqlite3_clear_bindings)
#define sqlite3_close_v2 (::kiln::storage::g_sqlite.sqlite3_close_v2)
#define sqlite3_column_blob (::kiln::storage::g_sqlite.sqlite3_column_blob)
#define sqlite3_column_bytes (::kiln::storage::g_sqlite.sqlite3_column_bytes)
#define sqlite3_column_double (::kiln::storage::g_sqlite.sqlite3_column_double)
#define sqlite3_column_int (::kiln::storage::g_sqlite.sqlite3_column_int)
#define sqlite3_column_int64 (::kiln::storage::g_sqlite.sqlite3_column_int64)
#define sqlite3_column_text (::kiln::storage::g_sqlite.sqlite3_column_text)
#define sqlite3_column_type (::kiln::storage::g_sqlite.sqlite3_column_type)
#define sqlite3_config (::kiln::storage::g_sqlite.sqlite3_config)
#define sqlite3_db_config (::kiln::storage::g_sqlite.sqlite3_db_config)
#define sqlite3_errcode (::kiln::storage::g_sqlite.sqlite3_errcode)
#define sqlite3_errmsg (::kiln::storage::g_sqlite.sqlite3_errmsg)
#define sqlite3_exec (::kiln::storage::g_sqlite.sqlite3_exec)
#define sqlite3_extended_result_codes (::kiln::storage::g_sqlite.sqlite3_extended_result_codes)
#define sqlite3_file_control (::kiln::storage::g_sqlite.sqlite3_file_control)
#define sqlite3_finalize (::kiln::storage::g_sqlite.sqlite3_finalize)
#define sqlite3_free (::kiln::storage::g_sqlite.sqlite3_free)
#define sqlite3_get_autocommit (::kiln::storage::g_sqlite.sqlite3_get_autocommit)
#define sqlite3_last_insert_rowid (::kiln::storage::g_sqlite.sqlite3_last_insert_rowid)
#define sqlite3_next_stmt (::kiln::storage::g_sqlite.sqlite3_next_stmt)
#define sqlite3_open_v2 (::kiln::storage::g_sqlite.sqlite3_open_v2)
#define sqlite3_prepare_v2 (::kiln::storage::g_sqlite.sqlite3_prepare_v2)
#define sqlite3_prepare_v3 (::kiln::storage::g_sqlite.sqlite3_prepare_v3)
#define sqlite3_reset (::kiln::storage::g_sqlite.sqlite3_reset)
#define sqlite3_step (::kiln::storage::g_sqlite.sqlite3_step)
#define sqlite3_stmt_busy (::kiln::storage::g_sqlite.sqlite3_stmt_busy)
#define sqlite3_total_changes64 (::kiln::storage::g_sqlite.sqlite3_total_changes64)
#define sqlite3_vfs_find (::kiln::storage::g_sqlite.sqlite3_vfs_find)
#define sqlite3_vfs_register (::kiln::storage::g_sqlite.sqlite3_vfs_register)
#define sqlite3_wal_checkpoint_v2 (::kiln::storage::g_sqlite.sqlite3_wal_checkpoint_v2)
#define sqlite3_commit_hook (::kiln::storage::g_sqlite.sqlite3_commit_hook)
#endif
