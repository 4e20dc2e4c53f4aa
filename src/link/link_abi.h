/* The plain-C boundary between the LLVM-free loader and the linker library
 * (libkiln-link), which the loader dlopens only when it has to relink an
 * image. C types only, so nothing about C++ or LLVM crosses it. */
#ifndef KILN_LINK_ABI_H
#define KILN_LINK_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_link_input {
  const char* data;
  size_t size;
  const char* name; /* for diagnostics: the job key */
} kiln_link_input;

/* Links host relocatable objects into one shared object (lld, in process).
 * On success returns 0 and out, out_size hold the bytes (malloc); on failure
 * returns non-zero and *error holds a malloc'd message with lld's
 * diagnostics. Serialised internally: safe to call from any thread. */
int kiln_link_host_shared(const kiln_link_input* inputs, size_t count, char** out,
                          size_t* out_size, char** error);

/* Links a closure's finished AMDGPU bitcode into one HSACO: IR-level link
 * (AMDGPU cannot size registers and stack across separately compiled
 * objects), codegen for cpu/features (a module of many kernels in parts
 * that keep each kernel's call graph whole, compiled on up to `threads`
 * threads; the bytes do not depend on `threads`), then lld. Same
 * conventions as above. */
int kiln_link_amdgpu_image(const kiln_link_input* bitcode, size_t count, const char* cpu,
                           const char* features, unsigned threads, char** out,
                           size_t* out_size, char** error);

/* Linker fingerprint, part of every image key (e.g. "lld 22.1.8"). */
const char* kiln_link_fingerprint(void);

/* Frees memory returned by this library. */
void kiln_link_free(void* p);

#define KILN_LINK_LIBRARY "libkiln-link.so"

#ifdef __cplusplus
}
#endif

#endif
