/* Kiln example host program: loads the roots of examples/deferred.ll from a
 * cache through the C API and calls them.
 *
 *   kiln-precompile --cache kiln.db examples/deferred.ll
 *   host_main kiln.db          (no argument: the default cache, see kiln.h)
 *
 * Prints one `name(args) = result` line per root; on any failure prints
 * kiln_last_error() to stderr and exits non-zero. */
#include <kiln/kiln.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef double (*saxpy_fn)(double, double, double);
typedef int64_t (*i64_fn)(int64_t);

static kiln_image* images[4];
static int image_count;

static void fail(const char* what, const char* name, kiln_status status) {
  fprintf(stderr, "host_main: %s %s: %s: %s\n", what, name, kiln_status_name(status),
          kiln_last_error());
}

/* Loads root `name` for the host and returns the address of its function, or
 * NULL after reporting why. The image stays loaded until main's cleanup. */
static void* load_root(kiln_cache* cache, const char* name) {
  kiln_image* image = NULL;
  kiln_status status = kiln_image_load(cache, name, "host", &image);
  if (status != KILN_OK) {
    fail("cannot load", name, status);
    return NULL;
  }
  images[image_count++] = image;
  void* fn = NULL;
  status = kiln_image_lookup(image, name, &fn);
  if (status != KILN_OK) {
    fail("cannot find", name, status);
    return NULL;
  }
  return fn;
}

int main(int argc, char** argv) {
  const char* cache_path = argc > 1 ? argv[1] : NULL;
  kiln_cache* cache = NULL;
  kiln_status status = kiln_cache_open(cache_path, &cache);
  if (status != KILN_OK) {
    fail("cannot open cache", cache_path ? cache_path : "(default)", status);
    return 1;
  }

  int ok = 0;
  void* saxpy_addr = load_root(cache, "saxpy_like");
  void* fib_addr = saxpy_addr ? load_root(cache, "fib") : NULL;
  void* collatz_addr = fib_addr ? load_root(cache, "collatz") : NULL;
  void* fib_calls_addr = collatz_addr ? load_root(cache, "fib_calls") : NULL;
  if (fib_calls_addr) {
    /* The C API hands out object pointers; memcpy converts them to function
     * pointers without the cast ISO C leaves undefined. */
    saxpy_fn saxpy_like;
    i64_fn fib, collatz, fib_calls;
    memcpy(&saxpy_like, &saxpy_addr, sizeof saxpy_like);
    memcpy(&fib, &fib_addr, sizeof fib);
    memcpy(&collatz, &collatz_addr, sizeof collatz);
    memcpy(&fib_calls, &fib_calls_addr, sizeof fib_calls);

    printf("saxpy_like(2, 3, 4) = %g\n", saxpy_like(2.0, 3.0, 4.0));
    printf("fib(20) = %lld\n", (long long)fib(20));
    printf("collatz(27) = %lld\n", (long long)collatz(27));
    printf("fib_calls(10) = %lld\n", (long long)fib_calls(10));
    ok = 1;
  }

  for (int i = 0; i < image_count; ++i)
    kiln_image_release(images[i]);
  kiln_cache_close(cache);
  return ok ? 0 : 1;
}
