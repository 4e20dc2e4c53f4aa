/* Kiln cache administration, C API: each call is one of kiln-inspect's
 * subcommands over an open cache (kiln.h), and answers with the same JSON
 * that `kiln-inspect SUBCOMMAND --json` prints: one line, UTF-8, strings
 * that are not valid UTF-8 written as kiln/text.hpp says. The C++ API
 * (kiln/admin.hpp) gives the same views as structs.
 *
 * Every call sets *json_out (a string the caller frees with kiln_admin_free)
 * on KILN_OK and NULL otherwise, with kiln_last_error() saying what was
 * wrong. A string argument that is optional may be NULL or "". Calls that
 * write (gc, import, stats with zero_first, config with a value) return
 * KILN_UNAVAILABLE on a read-only cache; a malformed argument (a key, a
 * size, a setting) is KILN_INVALID_ARGUMENT, and so is a cache that is not
 * a live handle (closed, or never opened: see kiln.h's "Misuse"). */
#ifndef KILN_ADMIN_H
#define KILN_ADMIN_H

#include <kiln/kiln.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Jobs and root names; `target` and `name_glob` (fnmatch) filter them. */
kiln_status kiln_admin_ls(kiln_cache* cache, const char* target, const char* name_glob,
                          char** json_out);
/** A job by key, a closure by key, or a root by name for `target`. */
kiln_status kiln_admin_show(kiln_cache* cache, const char* what, const char* target,
                            char** json_out);
/** A root's deferred graph: nodes and edges. */
kiln_status kiln_admin_graph(kiln_cache* cache, const char* what, const char* target,
                             char** json_out);
/** Every kernel library. */
kiln_status kiln_admin_libraries(kiln_cache* cache, char** json_out);
/** One kernel library with its roots and members. */
kiln_status kiln_admin_library(kiln_cache* cache, const char* name, const char* target,
                               char** json_out);
/** Writes the image of root `what` (a name or closure key; linking it if
 *  needed) to `path`; with `what` NULL or "" and a `library` named, that
 *  kernel library's image instead. */
kiln_status kiln_admin_export_image(kiln_cache* cache, const char* what, const char* library,
                                    const char* target, const char* path, char** json_out);
/** A job's artifact ("ptx", "bitcode" or "object"), raw: *bytes_out (freed
 *  with kiln_admin_free) holds *size_out bytes. */
kiln_status kiln_admin_dump(kiln_cache* cache, const char* job_key, const char* format,
                            void** bytes_out, size_t* size_out);
/** Counts, sizes and usage counters; `zero_first` resets the counters first. */
kiln_status kiln_admin_stats(kiln_cache* cache, int zero_first, char** json_out);
/** Every blob, closure, name and key checked; KILN_OK with "ok": false in
 *  the JSON when problems were found. */
kiln_status kiln_admin_verify(kiln_cache* cache, char** json_out);
/** Evicts least recently used closures: `max_size` ("500M") and
 *  `older_than` ("30d") may be NULL (neither: the cache's own limit). */
kiln_status kiln_admin_gc(kiln_cache* cache, const char* max_size, const char* older_than,
                          int dry_run, char** json_out);
/** Writes `count` roots or closure keys (none: every root) to a bundle. */
kiln_status kiln_admin_export(kiln_cache* cache, const char* file, const char* const* which,
                              size_t count, char** json_out);
/** Adds a bundle's contents after validating all of it. */
kiln_status kiln_admin_import(kiln_cache* cache, const char* file, char** json_out);
/** Which closures this machine could load. With `bundle`, those of that
 *  bundle file instead (nothing written; `cache` may then be NULL). */
kiln_status kiln_admin_check_portable(kiln_cache* cache, const char* bundle, char** json_out);
/** Which key components of two stored jobs differ. */
kiln_status kiln_admin_explain(kiln_cache* cache, const char* key_a, const char* key_b,
                               char** json_out);
/** The settings in force; with `name` and a `value`, sets it first. */
kiln_status kiln_admin_config(kiln_cache* cache, const char* name, const char* value,
                              char** json_out);
/** Frees what a kiln_admin_* call returned. NULL is ignored, and so is a
 *  pointer that is not an unfreed answer of one (freed already, or never
 *  returned by a kiln_admin_* call), with kiln_last_error() saying so. */
void kiln_admin_free(void* p);

#ifdef __cplusplus
}
#endif

#endif /* KILN_ADMIN_H */
