/* Exceptions inside libkiln in a plain C process linked with libkiln alone.
 *
 * libkiln does not need the unwinder (libgcc_s) when it is loaded; it opens
 * it at the first exception (src/runtime/unwinder.cpp). This checks that:
 *   - starting, opening a cache and a load that finds nothing map no
 *     libgcc_s;
 *   - an exception thrown inside a C entry point (the c-entry fault point)
 *     is unwound through libkiln's frames to its guard, from several
 *     threads at once on the first use, and comes back as KILN_INTERNAL
 *     with the message, not as an ended process, and the handle opened
 *     before them still closes.
 *
 *   kiln_embed_c_unwind WORK_DIR
 *
 * Prints one line per check that fails; exits non-zero if any did. */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__,     \
              #cond, kiln_last_error());                                                   \
      ++failures;                                                                          \
    }                                                                                      \
  } while (0)

static int unwinder_loaded(void) {
  void* h = dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h)
    dlclose(h);
  return h != NULL;
}

enum { kThreads = 8 };
static char g_cache_path[4096];
static kiln_cache* g_cache;

struct result {
  kiln_status status;
  int names_fault;
};

static void* throw_once(void* arg) {
  struct result* r = arg;
  kiln_cache* c = NULL;
  r->status = kiln_cache_open(g_cache_path, &c);
  r->names_fault = strstr(kiln_last_error(), "injected fault at c-entry") != NULL;
  if (c)
    kiln_cache_close(c);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: kiln_embed_c_unwind WORK_DIR\n");
    return 2;
  }
  snprintf(g_cache_path, sizeof g_cache_path, "%s/unwind.db", argv[1]);
  /* From the third C entry point called on, each throws before its body
   * runs (libkiln reads the plan once, at its first call). */
  setenv("KILN_FAULT", "c-entry:3+", 1);

  CHECK(!unwinder_loaded());
  CHECK(kiln_cache_open(g_cache_path, &g_cache) == KILN_OK);
  kiln_image* img = NULL;
  CHECK(kiln_image_load(g_cache, "absent", "host", &img) == KILN_NOT_FOUND);
  /* Starting, opening, a load that finds nothing: none of it throws. */
  CHECK(!unwinder_loaded());

  /* The first exceptions of the process, from several threads at once. */
  pthread_t t[kThreads];
  struct result r[kThreads];
  memset(r, 0, sizeof r);
  for (int i = 0; i < kThreads; ++i)
    CHECK(pthread_create(&t[i], NULL, throw_once, &r[i]) == 0);
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(t[i], NULL);
    CHECK(r[i].status == KILN_INTERNAL);
    CHECK(r[i].names_fault);
  }
  CHECK(unwinder_loaded());

  kiln_cache_close(g_cache);
  if (failures)
    fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
