/* A process that only loads: opens a cache, loads one root, calls it as
 * int(int), prints the result, and reports whether LLVM, the linker
 * library, hiredis, libsodium, SQLite or zstd got mapped into the process.
 *   load_probe CACHE NAME ARG  ->
 *     "result=N llvm=0|1 linker=0|1 hiredis=0|1 sodium=0|1 sqlite=0|1 zstd=0|1" */
#include <kiln/kiln.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mapped(const char* needle) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f))
    if (strstr(line, needle))
      found = 1;
  fclose(f);
  return found;
}

int main(int argc, char** argv) {
  kiln_cache* cache = NULL;
  kiln_image* image = NULL;
  void* fn = NULL;
  if (argc != 4) {
    fprintf(stderr, "usage: load_probe CACHE NAME ARG\n");
    return 2;
  }
  if (kiln_cache_open(argv[1], &cache) != KILN_OK ||
      kiln_image_load(cache, argv[2], "host", &image) != KILN_OK ||
      kiln_image_lookup(image, argv[2], &fn) != KILN_OK) {
    fprintf(stderr, "load_probe: %s\n", kiln_last_error());
    return 1;
  }
  int (*f)(int) = (int (*)(int))fn;
  printf("result=%d llvm=%d linker=%d hiredis=%d sodium=%d sqlite=%d zstd=%d\n",
         f(atoi(argv[3])), mapped("libLLVM"), mapped("libkiln-link"), mapped("libhiredis"),
         mapped("libsodium"), mapped("libsqlite3"), mapped("libzstd"));
  kiln_image_release(image);
  kiln_cache_close(cache);
  return 0;
}
