/* kiln-bench-first: time to first kernel in a fresh process, and what it is
 * made of. Run by bench/harness.py, which times the whole process from
 * outside and compares it with kiln-bench-bare (a C process that does
 * nothing); this program times its own steps and prints one JSON object.
 *
 *   kiln-bench-first none                   linked with libkiln, returns at once:
 *                                           its cost over the bare process is
 *                                           loading libkiln and what it links
 *   kiln-bench-first call CACHE NAME        open the cache, load NAME's host image,
 *                                           look it up and call it once, close
 *   kiln-bench-first run CACHE NAME         the same with no timers and no output:
 *                                           what the CPU figure measures, so that
 *                                           it counts nothing of this program's own
 *                                           (reading clocks, formatting numbers)
 *   kiln-bench-first create CACHE           open (creating) and close: an empty cache
 *   kiln-bench-first library CACHE LIB @FILE
 *                                           open, kiln_library_load(LIB, "host"), look
 *                                           up every name of FILE (one per line), close
 *
 * NAME in `call` must be a kernel of the benchmark's element-wise units:
 * void NAME(float* out, const float* a, const float* b, int n).
 *
 * kiln_library_load is looked up at run time, so this program builds
 * against a libkiln without it and says so when asked to use it. */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include "bench_util.h"

#include <dlfcn.h>

static int fail(const char* what) {
  fprintf(stderr, "kiln-bench-first: %s: %s\n", what, kiln_last_error());
  return 1;
}

typedef void (*element_kernel)(float*, const float*, const float*, int);
typedef kiln_status (*library_load_fn)(kiln_cache*, const char*, const char*, kiln_image**);

/* Open, load NAME's host image, look it up, call it, close; 0 on success. */
static int run_quietly(const char* path, const char* name) {
  kiln_cache* cache = NULL;
  kiln_image* img = NULL;
  void* fn = NULL;
  if (kiln_cache_open(path, &cache) != KILN_OK)
    return fail("open");
  if (kiln_image_load(cache, name, "host", &img) != KILN_OK)
    return fail("load");
  if (kiln_image_lookup(img, name, &fn) != KILN_OK || !fn)
    return fail("lookup");
  float out[16], a[16], b[16];
  for (int i = 0; i < 16; ++i)
    a[i] = (float)i, b[i] = 1.0f + (float)i / 4.0f, out[i] = 0.0f;
  ((element_kernel)fn)(out, a, b, 16);
  kiln_cache_close(cache);
  volatile float result = out[15]; /* the call is not optimized away */
  (void)result;
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && !strcmp(argv[1], "run"))
    return run_quietly(argv[2], argv[3]);
  double t0 = now_ms();
  if (argc < 2) {
    fprintf(stderr, "usage: kiln-bench-first none | call CACHE NAME | run CACHE NAME | create CACHE | "
                    "library CACHE LIB @FILE\n");
    return 2;
  }
  const char* mode = argv[1];
  if (!strcmp(mode, "none"))
    return 0;

  if (!strcmp(mode, "create") && argc == 3) {
    kiln_cache* cache = NULL;
    if (kiln_cache_open(argv[2], &cache) != KILN_OK)
      return fail("open");
    kiln_cache_close(cache);
    printf("{\"main_ms\": %.4f}\n", now_ms() - t0);
    return 0;
  }

  if (!strcmp(mode, "call") && argc == 4) {
    kiln_cache* cache = NULL;
    if (kiln_cache_open(argv[2], &cache) != KILN_OK)
      return fail("open");
    double t_open = now_ms();
    kiln_image* img = NULL;
    void* fn = NULL;
    if (kiln_image_load(cache, argv[3], "host", &img) != KILN_OK)
      return fail("load");
    double t_load = now_ms();
    if (kiln_image_lookup(img, argv[3], &fn) != KILN_OK || !fn)
      return fail("lookup");
    float out[16], a[16], b[16];
    for (int i = 0; i < 16; ++i)
      a[i] = (float)i, b[i] = 1.0f + (float)i / 4.0f, out[i] = 0.0f;
    ((element_kernel)fn)(out, a, b, 16);
    double t_call = now_ms();
    kiln_cache_close(cache);
    double t_close = now_ms();
    float sum = 0;
    for (int i = 0; i < 16; ++i)
      sum += out[i];
    printf("{\"open_ms\": %.4f, \"load_ms\": %.4f, \"lookup_call_ms\": %.4f, "
           "\"close_ms\": %.4f, \"main_ms\": %.4f, \"result\": %.4f}\n",
           t_open - t0, t_load - t_open, t_call - t_load, t_close - t_call, t_close - t0,
           (double)sum);
    /* The image stays loaded until exit, as in a program. */
    return 0;
  }

  if (!strcmp(mode, "library") && argc == 5 && argv[4][0] == '@') {
    library_load_fn library_load = (library_load_fn)dlsym(RTLD_DEFAULT, "kiln_library_load");
    if (!library_load) {
      fprintf(stderr, "kiln-bench-first: this libkiln has no kiln_library_load\n");
      return 3;
    }
    int count = 0;
    char** names = read_lines("kiln-bench-first", argv[4] + 1, &count);
    double t_start = now_ms();
    kiln_cache* cache = NULL;
    if (kiln_cache_open(argv[2], &cache) != KILN_OK)
      return fail("open");
    double t_open = now_ms();
    kiln_image* img = NULL;
    if (library_load(cache, argv[3], "host", &img) != KILN_OK)
      return fail("library load");
    double t_load = now_ms();
    for (int i = 0; i < count; ++i) {
      void* fn = NULL;
      if (kiln_image_lookup(img, names[i], &fn) != KILN_OK || !fn) {
        fprintf(stderr, "kiln-bench-first: lookup '%s': %s\n", names[i], kiln_last_error());
        return 1;
      }
    }
    double t_lookup = now_ms();
    kiln_cache_close(cache);
    double t_close = now_ms();
    printf("{\"roots\": %d, \"open_ms\": %.4f, \"load_ms\": %.4f, \"lookup_ms\": %.4f, "
           "\"close_ms\": %.4f, \"main_ms\": %.4f, \"fds\": %d}\n",
           count, t_open - t_start, t_load - t_open, t_lookup - t_load, t_close - t_lookup,
           t_close - t0, open_fds());
    return 0;
  }

  fprintf(stderr, "kiln-bench-first: bad arguments for '%s'\n", mode);
  return 2;
}
