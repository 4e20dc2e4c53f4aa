/* Kiln loader C API: open a cache, load a precompiled image, look up its
 * functions. Needs nothing but C types, so any FFI (Julia ccall, Python
 * ctypes, Rust bindgen) can call it. Link with `pkg-config --libs kiln`.
 *
 * Thread safety: a kiln_cache may be shared by threads; each call takes the
 * cache's lock for its database work. A kiln_image is immutable once loaded;
 * kiln_image_lookup may be called from any thread concurrently.
 *
 * Misuse: libkiln keeps a registry of its live handles (kiln_cache,
 * kiln_image) and checks every handle it is given against it, by the
 * pointer's value alone: it never reads through a pointer that is not a live
 * handle. A handle closed or released already, or a pointer that never was
 * one (garbage, another type's handle), is refused: calls that return a
 * status return KILN_INVALID_ARGUMENT with kiln_last_error() saying which
 * argument is "not a live kiln_cache handle" (or kiln_image); the others
 * answer as for NULL (kiln_cache_read_only 0, kiln_image_module NULL,
 * kiln_image_target "") and set kiln_last_error(); a second kiln_cache_close
 * or kiln_image_release does nothing but set it. The check costs a lookup
 * that takes no lock. A registry knows addresses, not history: once memory
 * a closed handle used is reused for a new handle, the stale pointer names
 * the new one, so a handle must still not be used after its end. Closing or
 * releasing a handle while another thread uses it is still a race. */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_cache kiln_cache;
typedef struct kiln_image kiln_image;

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_NOT_FOUND,        /* no such name, key, closure or function */
  KILN_INVALID_ARGUMENT, /* malformed key, target spec or argument */
  KILN_UNAVAILABLE,      /* a runtime or linker needed for this is not installed */
  KILN_CORRUPT,          /* stored bytes failed their checksum or validation */
  KILN_INTERNAL          /* anything else; kiln_last_error() says what */
} kiln_status;

/** Opens (creating if needed) the cache at `path`; NULL means the default:
 *  $KILN_CACHE, else $XDG_CACHE_HOME/kiln/kiln.db (XDG default ~/.cache).
 *  An empty `path` ("") is KILN_INVALID_ARGUMENT, not the default: it is
 *  far more often a path that went missing than a request for the default.
 *  A cache that is not writable is opened read-only (see
 *  kiln_cache_open_flags).
 *  On success *out owns the handle; close it with kiln_cache_close. */
kiln_status kiln_cache_open(const char* path, kiln_cache** out);

/** Flags of kiln_cache_open_flags. */
enum {
  /** Never write the cache: no file is created, nothing is migrated, usage
   *  counters and recency are dropped at close, and an image that has to be
   *  relinked is kept in memory for this handle only. */
  KILN_CACHE_READ_ONLY = 1u << 0,
  /** The local file alone: no remote tier, whatever $KILN_REMOTE says (the
   *  admin tools' view of one cache file). */
  KILN_CACHE_LOCAL_ONLY = 1u << 1
};

/** kiln_cache_open with `flags` (KILN_CACHE_*; 0 is kiln_cache_open).
 *  Without KILN_CACHE_READ_ONLY a cache is still opened read-only when
 *  $KILN_READ_ONLY is set (not "0") or when the file or its directory is not
 *  writable (another user's cache, a read-only mount). */
kiln_status kiln_cache_open_flags(const char* path, unsigned flags, kiln_cache** out);

/** 1 if the cache was opened read-only (asked for, or not writable); 0 for
 *  NULL or a handle that is not live. */
int kiln_cache_read_only(kiln_cache* cache);

/** Closes a cache (and the memory files of the host images it kept for
 *  loading again). Images loaded from it stay valid after the close. NULL
 *  is ignored; a handle closed already, or never opened, is left alone
 *  (kiln_last_error() says so). */
void kiln_cache_close(kiln_cache* cache);

/** Verifies the whole cache: every stored blob against its checksum, every
 *  closure's members and open deferred symbols, every name's closure, every
 *  job's and closure's key recomputed from what is stored, and every stored
 *  image checked as a loader would. Reads only.
 *  KILN_OK: nothing is wrong. KILN_CORRUPT: *problems things are wrong and
 *  kiln_last_error() describes the first. Any other status: the cache could
 *  not be read. `problems` may be NULL. */
kiln_status kiln_cache_verify(kiln_cache* cache, size_t* problems);

/** Loads the image of a precompiled root.
 *  name: a 32-hex closure key (either case), which is only ever read as a
 *        key, else a root's entry name (the latest precompile for that
 *        target). No root may be named like a key, so a key always loads
 *        the closure it spells.
 *  target: "host", "sm_90", "gfx942", ... or NULL for the best match for this
 *        process's devices.
 *  A cached image is loaded without compiling anything; if only the
 *  closure's job artifacts are cached, they are relinked (bringing in the
 *  linker lazily) and the image is stored for next time (in a read-only
 *  cache: kept in memory for this handle). A root of a kernel library
 *  (kiln-precompile --library) has no image of its own: it loads the
 *  library's, which holds it (and the library's other kernels).
 *  On CPUs: a name whose latest precompile was another machine's, for
 *  features this CPU lacks, loads this CPU's build of the same source where
 *  the cache holds one.
 *  A handle keeps the host images it loaded last (at most 8, and 64 MiB, in
 *  sealed memory files: one descriptor each) and loads one of them again
 *  without reading the cache while nothing has changed the cache file since.
 *  Every load is an object of its own, with its own globals.
 *  On success *out owns the image; release it with kiln_image_release. */
kiln_status kiln_image_load(kiln_cache* cache, const char* name, const char* target,
                            kiln_image** out);

/** Loads a kernel library: the roots one precompile recorded under `name`
 *  (kiln-precompile --library NAME, CompileRequest::library) as one image
 *  holding all their kernels and deferred closures, as a CUDA module holds
 *  many kernels. kiln_image_lookup then finds every root (and every job of
 *  their closures) by its source name. target: as for kiln_image_load. A
 *  32-hex `name` is a closure key, loaded as kiln_image_load loads it.
 *  A cached library image loads without linking; if only the roots' job
 *  artifacts are cached it is relinked once and stored.
 *  On success *out owns the image; release it with kiln_image_release. */
kiln_status kiln_library_load(kiln_cache* cache, const char* name, const char* target,
                              kiln_image** out);

/** Looks up a function of a loaded image by its original entry name (any
 *  job of the closure). For host images *out is the function's address; for
 *  NVIDIA images a CUfunction, for AMD images a hipFunction_t (kernels only:
 *  device functions are reached through the kernels' deferred pointers).
 *  Launch GPU kernels with cuLaunchKernel / hipModuleLaunchKernel. */
kiln_status kiln_image_lookup(kiln_image* image, const char* entry, void** out);

/** The loaded module: a dlopen handle (host), CUmodule (NVIDIA, loaded into
 *  device 0's primary context) or hipModule_t (AMD). Owned by the image.
 *  NULL for NULL or an image that is not live. */
void* kiln_image_module(kiln_image* image);

/** The target the image was loaded for ("host", "sm_90", ...); owned by the
 *  image. "" for NULL or an image that is not live. */
const char* kiln_image_target(kiln_image* image);

/** Unloads an image. Pointers obtained from it become invalid. NULL is
 *  ignored; an image released already, or never loaded, is left alone
 *  (kiln_last_error() says so). */
void kiln_image_release(kiln_image* image);

/** This thread's last failure, with context (path, key, entry, target).
 *  Valid until this thread's next Kiln call. Never NULL. */
const char* kiln_last_error(void);

/** Name of a status code, e.g. "KILN_CORRUPT". */
const char* kiln_status_name(kiln_status status);

/** The ABI these headers describe: libkiln's shared object version
 *  (libkiln.so.KILN_ABI_VERSION). It changes only when a declaration here
 *  changes incompatibly; additions keep it. */
#define KILN_ABI_VERSION 0

/** The version of the libkiln actually loaded, "MAJOR.MINOR.PATCH" (not of
 *  the headers a program was compiled with). */
const char* kiln_version(void);

/** The ABI version of the libkiln actually loaded: a program compiled
 *  against KILN_ABI_VERSION runs with it when the two are equal. */
int kiln_abi_version(void);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H */
