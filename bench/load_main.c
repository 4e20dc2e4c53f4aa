/* kiln-bench-load: what a program does at start: open the cache, load the
 * named roots' images for the host and look each root up. Run as a fresh
 * process by bench/harness.py; prints one JSON object with its own timings
 * (the harness also times the whole process) and the descriptors it holds
 * with every image loaded.
 *
 *   kiln-bench-load CACHE NAME...      (or @FILE: one name per line) */
#include <kiln/kiln.h>

#include "bench_util.h"

int main(int argc, char** argv) {
  double t0 = now_ms();
  if (argc < 3) {
    fprintf(stderr, "usage: kiln-bench-load CACHE NAME... | @FILE\n");
    return 2;
  }
  char** names = argv + 2;
  int count = argc - 2;
  if (argc == 3 && argv[2][0] == '@')
    names = read_lines("kiln-bench-load", argv[2] + 1, &count);

  kiln_cache* cache = NULL;
  if (kiln_cache_open(argv[1], &cache) != KILN_OK) {
    fprintf(stderr, "kiln-bench-load: %s\n", kiln_last_error());
    return 1;
  }
  double t_open = now_ms();
  kiln_image** images = calloc((size_t)count, sizeof(kiln_image*));
  for (int i = 0; i < count; ++i) {
    void* fn = NULL;
    if (kiln_image_load(cache, names[i], "host", &images[i]) != KILN_OK ||
        kiln_image_lookup(images[i], names[i], &fn) != KILN_OK || !fn) {
      fprintf(stderr, "kiln-bench-load: '%s': %s\n", names[i], kiln_last_error());
      return 1;
    }
  }
  double t_load = now_ms();
  int fds = open_fds();
  /* Images stay loaded, as in a program; the close flushes usage counters. */
  kiln_cache_close(cache);
  double t_close = now_ms();
  printf("{\"roots\": %d, \"open_ms\": %.4f, \"load_ms\": %.4f, \"close_ms\": %.4f, "
         "\"main_ms\": %.4f, \"fds\": %d}\n",
         count, t_open - t0, t_load - t_open, t_close - t_load, t_close - t0, fds);
  return 0;
}
