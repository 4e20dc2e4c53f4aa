/* A reader for the gc concurrency test: loads roots over and over until a
 * stop file appears, each load from a fresh open of the cache, and sorts
 * every load into succeeded (with the right value), missed (KILN_NOT_FOUND:
 * a gc evicted the root) or failed (anything else, KILN_CORRUPT above all).
 *   gc_probe CACHE STOPFILE NAME=EXPECT...
 *   -> "loads=N ok=N missed=N failed=N" on stdout, each failure on stderr;
 *      exit 0 if none failed. */
#include <kiln/kiln.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  long loads = 0, ok = 0, missed = 0, failed = 0;
  if (argc < 4) {
    fprintf(stderr, "usage: gc_probe CACHE STOPFILE NAME=EXPECT...\n");
    return 2;
  }
  for (int round = 0; access(argv[2], F_OK) != 0 || round == 0; ++round) {
    for (int i = 3; i < argc; ++i) {
      char name[256];
      const char* eq = strchr(argv[i], '=');
      size_t n = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
      if (n >= sizeof name)
        return 2;
      memcpy(name, argv[i], n);
      name[n] = 0;
      int expect = eq ? atoi(eq + 1) : 0;
      kiln_cache* cache = NULL;
      kiln_image* image = NULL;
      void* fn = NULL;
      kiln_status s = kiln_cache_open(argv[1], &cache);
      if (s == KILN_OK)
        s = kiln_image_load(cache, name, "host", &image);
      if (s == KILN_OK)
        s = kiln_image_lookup(image, name, &fn);
      ++loads;
      if (s == KILN_OK) {
        int got = ((int (*)(int))fn)(5);
        if (got == expect) {
          ++ok;
        } else {
          ++failed;
          fprintf(stderr, "gc_probe: %s computed %d, not %d\n", name, got, expect);
        }
      } else if (s == KILN_NOT_FOUND) {
        ++missed;
      } else {
        ++failed;
        fprintf(stderr, "gc_probe: loading %s: %s: %s\n", name, kiln_status_name(s),
                kiln_last_error());
      }
      if (image)
        kiln_image_release(image);
      if (cache)
        kiln_cache_close(cache);
    }
  }
  printf("loads=%ld ok=%ld missed=%ld failed=%ld\n", loads, ok, missed, failed);
  return failed ? 1 : 0;
}
