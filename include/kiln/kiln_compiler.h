/* Kiln compiler C API: compile LLVM IR held in memory into a Kiln cache, and
 * the one call a JIT wants, compile-or-load. Lives in libkiln-compiler
 * (which links LLVM) so that the loader, libkiln, stays free of it. Link with
 * `pkg-config --libs kiln-compiler` or CMake's kiln::kiln-compiler.
 *
 * Like kiln.h it needs nothing but C types: every struct below is plain data
 * that an FFI (Python ctypes, Julia ccall, Rust bindgen) can lay out.
 *
 * Ownership: the caller owns what it passes in and may free it as soon as a
 * call returns. Every string a result hands out (keys, names, messages) is
 * owned by that result and lives until kiln_compile_result_free; images are
 * released with kiln_image_release (kiln.h), whatever call made them.
 *
 * Thread safety: several threads may compile, and compile-or-load, through
 * one kiln_cache at once; each compile uses its own LLVM context and its own
 * connection to the cache file, and identical jobs compiled concurrently are
 * stored once. A kiln_compile_result is immutable and may be read from any
 * thread.
 *
 * Misuse: as kiln.h says of its handles, a kiln_cache or kiln_image that is
 * not live, or a kiln_compile_result freed already or never returned, is
 * refused without being read: KILN_INVALID_ARGUMENT from the calls with a
 * status, 0 from the counts and kiln_compile_result_ok, and nothing done by
 * a second kiln_compile_result_free; kiln_compile_last_error() says which
 * argument it was. */
#ifndef KILN_KILN_COMPILER_H
#define KILN_KILN_COMPILER_H

#include <kiln/kiln.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One input buffer: LLVM bitcode or textual IR. Several buffers are linked
 *  into one unit. */
typedef struct kiln_source {
  const char* name; /* shown in messages ("kernels.ll:3:7: ..."); NULL: "buffer<N>" */
  const void* data; /* the bytes; need not be NUL-terminated */
  size_t size;
} kiln_source;

/** libkiln-compiler's ABI version: its shared object version
 *  (libkiln-compiler.so.1). It rises when a declaration here changes
 *  incompatibly; a field appended to a struct below does not change it,
 *  since each struct says its own size (see struct_size). */
#define KILN_COMPILER_ABI_VERSION 1

/** Every struct the caller allocates for this header starts with its size,
 *  as the caller was built: sizeof the struct. The library reads (or, for
 *  results, writes) only the fields that size covers, so a program built
 *  against an older header keeps working with a newer library: the fields
 *  it does not know take their defaults. A struct_size that no release of
 *  this header gave the struct is KILN_INVALID_ARGUMENT, naming the sizes
 *  this library knows: garbage (never set, a pointer, an FFI's layout gone
 *  wrong), and the size of a newer header than the library's (run a
 *  program with a libkiln-compiler at least as new as its header). So far
 *  each struct has one released size, this header's sizeof. */

/** What to compile. Fill it with kiln_compile_options_init, then set fields:
 *  a zeroed struct is refused (its struct_size is 0). */
typedef struct kiln_compile_options {
  size_t struct_size;         /* sizeof(kiln_compile_options); set by init */
  const kiln_source* sources;
  size_t source_count;
  const char* const* entries; /* root entry names; none: every exported function
                                 (host) or kernel (GPU targets) */
  size_t entry_count;
  const char* const* targets; /* target specs ("host", "sm_90", "gfx942"); none: "host" */
  size_t target_count;
  int opt_level;              /* 0..3; default 2 */
  int debug;                  /* nonzero: keep debug info */
  unsigned jobs;              /* parallel compiles; 0: one per hardware thread */
  int link_images;            /* nonzero (default): link each root's image now, so
                                 that a load is a cache hit */
  int must_hit;               /* nonzero: a call that would compile any job fails
                                 with KILN_NOT_FOUND before compiling, naming the
                                 job and how it differs from the nearest cached
                                 one; default: $KILN_MUST_HIT set and not "0" */
  const char* library;        /* NULL or "" (default): none; else the roots of each
                                 target are also recorded under this name as one
                                 library, one image (kiln_library_load) */
  const char* remote;         /* the shared tier, redis://[user:password@]host[:port]
                                 [/db][?options]; NULL or "" (default): $KILN_REMOTE;
                                 "off": none */
  int remote_read_only;       /* nonzero: fetch from the tier, never publish */
  unsigned shard_index;       /* compile only the jobs of shard shard_index of */
  unsigned shard_count;       /* shard_count (0-based); 0 or 1 (default): all */
} kiln_compile_options;

/** Sets the defaults in the `size` bytes of *options (its struct_size
 *  included): no sources, entries or targets, -O2, no debug info, all
 *  hardware threads, images linked, must-hit from $KILN_MUST_HIT, no
 *  library, the remote tier from $KILN_REMOTE, unsharded. For an FFI, which
 *  passes the size of its own layout; C and C++ call
 *  kiln_compile_options_init. A `size` that is not a released size (see
 *  struct_size) writes nothing; kiln_compile_last_error() says why. */
void kiln_compile_options_init_size(kiln_compile_options* options, size_t size);

/** kiln_compile_options_init_size with this header's size. */
static inline void kiln_compile_options_init(kiln_compile_options* options) {
  kiln_compile_options_init_size(options, sizeof *options);
}

typedef enum kiln_job_status {
  KILN_JOB_COMPILED = 0, /* compiled now and stored */
  KILN_JOB_CACHED,       /* the cache had it: nothing compiled */
  KILN_JOB_FAILED        /* see kiln_job_info.error; the other jobs are stored */
} kiln_job_status;

/** One job of a compile. Strings are owned by the result. Set struct_size
 *  to sizeof(kiln_job_info) before kiln_compile_result_job fills it. */
typedef struct kiln_job_info {
  size_t struct_size;
  const char* key;    /* 32 hex: the job's content key */
  const char* entry;  /* the function the job compiles */
  const char* target; /* canonical target spec */
  const char* symbol; /* the deferred symbol parents call it by */
  kiln_job_status status;
  const char* error;  /* "" unless failed */
  double compile_ms;  /* 0 unless compiled now */
  size_t ref_count;   /* open deferred references: kiln_compile_result_job_ref */
} kiln_job_info;

/** One root (entry × target) of a compile. Strings are owned by the result.
 *  Set struct_size to sizeof(kiln_root_info) before kiln_compile_result_root
 *  fills it. */
typedef struct kiln_root_info {
  size_t struct_size;
  const char* name;    /* the root's entry name: what kiln_image_load takes */
  const char* target;  /* canonical target spec */
  const char* closure; /* 32 hex: the root's closure key; "" if a member failed */
  int has_image;       /* an image is linked and cached */
  const char* note;    /* why no image was linked (e.g. no linker here), or "" */
  const char* error;   /* "" unless the root failed */
} kiln_root_info;

/** One library of a compile (kiln_compile_options.library), per target.
 *  Strings are owned by the result. Set struct_size to
 *  sizeof(kiln_library_info) before kiln_compile_result_library fills it. */
typedef struct kiln_library_info {
  size_t struct_size;
  const char* name;    /* what kiln_library_load takes */
  const char* target;  /* canonical target spec */
  const char* closure; /* 32 hex: the union of its roots' closures; "" on error */
  size_t roots;        /* how many roots it holds */
  size_t members;      /* how many jobs its image links */
  int has_image;       /* its image is linked and cached */
  const char* note;    /* why no image was linked, or "" */
  const char* error;   /* why it was not recorded (a root failed, two kernels
                          share a name), or "" */
} kiln_library_info;

/** A failure with its context. Fields the failure does not concern are ""
 *  or 0. Only kiln_compile_last_error hands one out (the library owns it),
 *  so fields are only ever added at the end. */
typedef struct kiln_error_info {
  kiln_status status;
  const char* message; /* the whole message, as kiln_last_error would say it */
  const char* source;  /* the input (kiln_source.name) it is about, or "" */
  unsigned line;       /* 1-based line in that input (textual IR), or 0 */
  unsigned column;     /* 1-based column, or 0 */
  const char* entry;   /* the entry / job it is about, or "" */
  const char* target;  /* the target spec it is about, or "" */
  const char* job;     /* 32 hex: the key of the job it is about, or "" */
} kiln_error_info;

typedef struct kiln_compile_result kiln_compile_result;

/** Compiles the jobs of a unit that the cache lacks, stores each in its own
 *  transaction, records each root's closure under its name and (unless
 *  link_images is 0) links its image. Input errors (IR syntax, a missing
 *  entry, an unknown target, a bad kiln_deferred) are KILN_INVALID_ARGUMENT
 *  and change nothing in the cache. A job that fails to compile does not
 *  fail the call: it returns KILN_OK with that job KILN_JOB_FAILED (see
 *  kiln_compile_result_ok). On KILN_OK *out owns a result; free it with
 *  kiln_compile_result_free. */
kiln_status kiln_compile(kiln_cache* cache, const kiln_compile_options* options,
                         kiln_compile_result** out);

/** The JIT's call: the image of root `entry` for `target`, from the cache
 *  if it is there, else compiled, stored, linked and then loaded.
 *  target: a spec, or NULL for the present device (an NVIDIA GPU's sm_XY,
 *  else an AMD GPU's gfxNNN, else the host).
 *  options: the sources and codegen options; its entries and targets must
 *  be empty (this call names the one root and target).
 *  The cache is consulted first: the unit is parsed and keyed, and if the
 *  root's closure is stored its image is loaded and nothing is compiled.
 *  report: if not NULL, receives a result describing the jobs (all
 *  KILN_JOB_CACHED on a hit), owned by the caller; NULL on failure.
 *  A job that fails to compile is KILN_INTERNAL with the compiler's message.
 *  On KILN_OK *out owns the image; release it with kiln_image_release. */
kiln_status kiln_compile_or_load(kiln_cache* cache, const kiln_compile_options* options,
                                 const char* entry, const char* target, kiln_image** out,
                                 kiln_compile_result** report);

/** Nonzero if every job compiled or was cached and every root has a
 *  closure. */
int kiln_compile_result_ok(const kiln_compile_result* result);

size_t kiln_compile_result_job_count(const kiln_compile_result* result);
/** Fills *out with job `index` (in discovery order, over all targets). */
kiln_status kiln_compile_result_job(const kiln_compile_result* result, size_t index,
                                    kiln_job_info* out);
/** Deferred reference `ref` of job `job`: the symbol its code leaves open
 *  and the key of the job that satisfies it. */
kiln_status kiln_compile_result_job_ref(const kiln_compile_result* result, size_t job,
                                        size_t ref, const char** symbol, const char** key);

size_t kiln_compile_result_root_count(const kiln_compile_result* result);
kiln_status kiln_compile_result_root(const kiln_compile_result* result, size_t index,
                                     kiln_root_info* out);

size_t kiln_compile_result_library_count(const kiln_compile_result* result);
kiln_status kiln_compile_result_library(const kiln_compile_result* result, size_t index,
                                        kiln_library_info* out);

/** Frees a result. NULL is ignored; a result freed already, or never
 *  returned, is left alone (kiln_compile_last_error() says so). */
void kiln_compile_result_free(kiln_compile_result* result);

/** The ABI version of the libkiln-compiler actually loaded, to compare with
 *  the KILN_COMPILER_ABI_VERSION a program was built with. */
int kiln_compiler_abi_version(void);

/** This thread's last failure of a call in this header, with its context.
 *  Valid until this thread's next call into this header; never NULL (status
 *  KILN_OK and message "" if there was none). */
const kiln_error_info* kiln_compile_last_error(void);

/** The target compile-or-load uses when given NULL: an NVIDIA GPU's
 *  "sm_XY" when the CUDA driver sees one, else an AMD GPU's "gfxNNN[:...]"
 *  when HIP sees one, else "host". Static storage. */
const char* kiln_present_target(void);

/** Name of a job status: "compiled", "cached" or "failed". */
const char* kiln_job_status_name(kiln_job_status status);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_COMPILER_H */
