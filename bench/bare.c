/* kiln-bench-bare: with no arguments a C process that does nothing, built
 * like the other benchmark programs: what time to first kernel is compared
 * with. With arguments, a measurement beside it:
 *
 *   kiln-bench-bare IMAGE.so SYMBOL   the floor of a hit: dlopen a shared object
 *                                     from a file and call one of the benchmark's
 *                                     element-wise kernels in it, no cache at all
 *   kiln-bench-bare LIBRARY.so -      dlopen a library (libkiln) and nothing else
 *   kiln-bench-bare @FILE -           dlopen every shared object FILE names (one
 *                                     path a line), keeping each loaded
 *
 * Each prints {"dlopen_ms": ..., "count": N}, the dlopen calls alone
 * (mapping, relocation, constructors). */
#include "bench_util.h"

#include <dlfcn.h>

typedef void (*element_kernel)(float*, const float*, const float*, int);

/* dlopen every path of a list; the list is read before the clock starts. */
static int open_list(const char* list) {
  int n = 0;
  char** paths = read_lines("kiln-bench-bare", list, &n);
  double t0 = now_ms();
  for (int i = 0; i < n; ++i)
    if (!dlopen(paths[i], RTLD_NOW | RTLD_LOCAL)) {
      fprintf(stderr, "kiln-bench-bare: %s\n", dlerror());
      return 1;
    }
  printf("{\"dlopen_ms\": %.4f, \"count\": %d}\n", now_ms() - t0, n);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3)
    return 0;
  if (argv[1][0] == '@')
    return open_list(argv[1] + 1);
  double t0 = now_ms();
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  double t1 = now_ms();
  if (!h) {
    fprintf(stderr, "kiln-bench-bare: %s\n", dlerror());
    return 1;
  }
  int ok = 1;
  if (strcmp(argv[2], "-") != 0) {
    void* fn = dlsym(h, argv[2]);
    if (!fn) {
      fprintf(stderr, "kiln-bench-bare: %s\n", dlerror());
      return 1;
    }
    float out[16], a[16], b[16];
    for (int i = 0; i < 16; ++i)
      a[i] = (float)i, b[i] = 1.0f + (float)i / 4.0f, out[i] = 0.0f;
    ((element_kernel)fn)(out, a, b, 16);
    ok = out[3] == out[3]; /* uses the result */
  }
  printf("{\"dlopen_ms\": %.4f, \"count\": 1}\n", t1 - t0);
  return ok ? 0 : 1;
}
