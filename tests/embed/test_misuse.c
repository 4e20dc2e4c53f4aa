/* The C APIs under misuse (kiln.h, kiln_compiler.h, admin.h), in plain C: a
 * handle closed, released or freed twice, a handle used after its end, a
 * pointer that never was a handle (an unmapped address, a buffer of garbage,
 * another type's handle) given to every entry point that takes one, an empty
 * cache path, and struct sizes no release has. Each must be refused with
 * KILN_INVALID_ARGUMENT (or the call's answer for NULL) and a last error
 * saying what, and never crash.
 *
 *   kiln_embed_misuse EXAMPLES_DIR
 *
 * Each case runs in a child process of its own, so that one that crashes
 * fails alone and the others still report. Prints one line per check or
 * case that fails; exits non-zero if any did. */
#include <kiln/admin.h>
#include <kiln/kiln_compiler.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures; /* of the case running in this child */

static int check(int ok, const char* what, const char* file, int line) {
  if (!ok) {
    fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", file, line, what,
            kiln_last_error());
    ++failures;
  }
  return ok;
}
#define CHECK(cond) check((cond) != 0, #cond, __FILE__, __LINE__)

/* The last error names the handle that was refused. */
static int says(const char* want) { return strstr(kiln_last_error(), want) != NULL; }
#define CHECK_REFUSED(call, want)                                                              \
  do {                                                                                         \
    kiln_status st_ = (call);                                                                  \
    check(st_ == KILN_INVALID_ARGUMENT, #call " == KILN_INVALID_ARGUMENT", __FILE__,           \
          __LINE__);                                                                           \
    check(says(want), #call ": the last error says " #want, __FILE__, __LINE__);               \
  } while (0)

static char tmpdir[256];
static char cache_path[512];
static kiln_source example;

static kiln_cache* open_cache(void) {
  kiln_cache* cache = NULL;
  if (kiln_cache_open(cache_path, &cache) != KILN_OK) {
    fprintf(stderr, "cannot open %s: %s\n", cache_path, kiln_last_error());
    exit(1);
  }
  return cache;
}

static kiln_image* load(kiln_cache* cache) {
  kiln_image* image = NULL;
  if (kiln_image_load(cache, "collatz", "host", &image) != KILN_OK) {
    fprintf(stderr, "cannot load collatz: %s\n", kiln_last_error());
    exit(1);
  }
  return image;
}

static kiln_compile_options options(void) {
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &example;
  o.source_count = 1;
  return o;
}

static kiln_compile_result* compile(kiln_cache* cache) {
  kiln_compile_options o = options();
  kiln_compile_result* r = NULL;
  if (kiln_compile(cache, &o, &r) != KILN_OK) {
    fprintf(stderr, "cannot compile: %s\n", kiln_last_error());
    exit(1);
  }
  return r;
}

/* Pointers that never were a handle: an address nothing is mapped at, and
 * a buffer of garbage on the stack, which a reader that trusted it would
 * follow to wild addresses. */
#define NOT_MAPPED ((void*)(uintptr_t)0x1234)
static unsigned char junk[4096] __attribute__((aligned(64)));
static void* garbage(void) {
  memset(junk, 0xA5, sizeof junk);
  return junk;
}

/* Every entry point that takes a kiln_cache, given `cache`, which is not a
 * live one. Ends with a close of it, which must do nothing. */
static void cache_refused_everywhere(kiln_cache* cache) {
  const char* want = "not a live kiln_cache handle";
  kiln_image* image = (kiln_image*)NOT_MAPPED;
  kiln_compile_result* result = (kiln_compile_result*)NOT_MAPPED;
  char* json = (char*)NOT_MAPPED;
  size_t problems = 7;

  CHECK(kiln_cache_read_only(cache) == 0);
  CHECK(says(want));
  CHECK_REFUSED(kiln_cache_verify(cache, &problems), "kiln_cache_verify: cache is not a live");
  CHECK(problems == 0);
  CHECK_REFUSED(kiln_image_load(cache, "collatz", "host", &image), "kiln_image_load: cache");
  CHECK(image == NULL);
  image = (kiln_image*)NOT_MAPPED;
  CHECK_REFUSED(kiln_library_load(cache, "collatz", "host", &image), want);
  CHECK(image == NULL);

  kiln_compile_options o = options();
  CHECK_REFUSED(kiln_compile(cache, &o, &result), "kiln_compile: cache");
  CHECK(result == NULL);
  CHECK(kiln_compile_last_error()->status == KILN_INVALID_ARGUMENT);
  image = (kiln_image*)NOT_MAPPED;
  result = (kiln_compile_result*)NOT_MAPPED;
  CHECK_REFUSED(kiln_compile_or_load(cache, &o, "collatz", "host", &image, &result), want);
  CHECK(image == NULL && result == NULL);

#define ADMIN(call)                                                                            \
  do {                                                                                         \
    json = (char*)NOT_MAPPED;                                                                  \
    CHECK_REFUSED(call, "not a live kiln_cache handle");                                       \
    CHECK(json == NULL);                                                                       \
  } while (0)
  ADMIN(kiln_admin_ls(cache, NULL, NULL, &json));
  ADMIN(kiln_admin_show(cache, "collatz", "host", &json));
  ADMIN(kiln_admin_graph(cache, "collatz", "host", &json));
  ADMIN(kiln_admin_libraries(cache, &json));
  ADMIN(kiln_admin_library(cache, "lib", "host", &json));
  char out[600];
  snprintf(out, sizeof out, "%s/never-written.so", tmpdir);
  ADMIN(kiln_admin_export_image(cache, "collatz", NULL, "host", out, &json));
  CHECK(access(out, F_OK) != 0);
  ADMIN(kiln_admin_stats(cache, 1, &json));
  ADMIN(kiln_admin_verify(cache, &json));
  ADMIN(kiln_admin_gc(cache, "1", NULL, 0, &json));
  snprintf(out, sizeof out, "%s/never-written.bundle", tmpdir);
  ADMIN(kiln_admin_export(cache, out, NULL, 0, &json));
  CHECK(access(out, F_OK) != 0);
  ADMIN(kiln_admin_import(cache, out, &json));
  ADMIN(kiln_admin_check_portable(cache, NULL, &json));
  ADMIN(kiln_admin_explain(cache, "00000000000000000000000000000000",
                           "00000000000000000000000000000000", &json));
  ADMIN(kiln_admin_config(cache, "max_size", "1", &json));
#undef ADMIN
  void* bytes = NOT_MAPPED;
  size_t size = 7;
  CHECK_REFUSED(kiln_admin_dump(cache, "00000000000000000000000000000000", "object", &bytes,
                                &size),
                want);
  CHECK(bytes == NULL && size == 0);

  kiln_cache_close(cache);
  CHECK(says("kiln_cache_close: cache is not a live kiln_cache handle"));
}

/* Every entry point that takes a kiln_image, given `image`, not a live one. */
static void image_refused_everywhere(kiln_image* image) {
  const char* want = "not a live kiln_image handle";
  void* fn = NOT_MAPPED;
  CHECK_REFUSED(kiln_image_lookup(image, "collatz", &fn), "kiln_image_lookup: image is not");
  CHECK(fn == NULL);
  CHECK(kiln_image_module(image) == NULL);
  CHECK(says(want));
  CHECK(strcmp(kiln_image_target(image), "") == 0);
  CHECK(says(want));
  kiln_image_release(image);
  CHECK(says("kiln_image_release: image is not a live kiln_image handle"));
}

/* Every entry point that takes a kiln_compile_result, given `r`, not a
 * live one. */
static void result_refused_everywhere(kiln_compile_result* r) {
  const char* want = "not a live kiln_compile_result";
  CHECK(kiln_compile_result_ok(r) == 0);
  CHECK(says(want));
  CHECK(kiln_compile_result_job_count(r) == 0);
  CHECK(says(want));
  CHECK(kiln_compile_result_root_count(r) == 0);
  CHECK(says(want));
  CHECK(kiln_compile_result_library_count(r) == 0);
  CHECK(says(want));
  kiln_job_info job = {.struct_size = sizeof job};
  CHECK_REFUSED(kiln_compile_result_job(r, 0, &job), "kiln_compile_result_job: result is not");
  kiln_root_info root = {.struct_size = sizeof root};
  CHECK_REFUSED(kiln_compile_result_root(r, 0, &root), want);
  kiln_library_info lib = {.struct_size = sizeof lib};
  CHECK_REFUSED(kiln_compile_result_library(r, 0, &lib), want);
  const char *symbol = NULL, *key = NULL;
  CHECK_REFUSED(kiln_compile_result_job_ref(r, 0, 0, &symbol, &key), want);
  CHECK(kiln_compile_last_error()->status == KILN_INVALID_ARGUMENT);
  kiln_compile_result_free(r);
  CHECK(says("kiln_compile_result_free: result is not a live"));
}

/* --- the cases -------------------------------------------------------------- */

static void cache_double_close(void) {
  kiln_cache* cache = open_cache();
  kiln_cache_close(cache);
  kiln_cache_close(cache);
  CHECK(says("kiln_cache_close: cache is not a live kiln_cache handle (closed, or never "
             "opened)"));
}

static void cache_use_after_close(void) {
  kiln_cache* cache = open_cache();
  kiln_image* image = load(cache); /* images outlive their cache */
  kiln_cache_close(cache);
  cache_refused_everywhere(cache);
  void* fn = NULL;
  CHECK(kiln_image_lookup(image, "collatz", &fn) == KILN_OK && fn);
  kiln_image_release(image);
}

static void cache_not_mapped(void) { cache_refused_everywhere((kiln_cache*)NOT_MAPPED); }

static void cache_garbage(void) { cache_refused_everywhere((kiln_cache*)garbage()); }

static void cache_is_an_image(void) {
  kiln_cache* cache = open_cache();
  kiln_image* image = load(cache);
  cache_refused_everywhere((kiln_cache*)(void*)image);
  void* fn = NULL;
  CHECK(kiln_image_lookup(image, "collatz", &fn) == KILN_OK && fn); /* untouched */
  kiln_image_release(image);
  kiln_cache_close(cache);
}

static void image_double_release(void) {
  kiln_cache* cache = open_cache();
  kiln_image* image = load(cache);
  kiln_image_release(image);
  kiln_image_release(image);
  CHECK(says("kiln_image_release: image is not a live kiln_image handle (released, or never "
             "loaded)"));
  kiln_cache_close(cache);
}

static void image_use_after_release(void) {
  kiln_cache* cache = open_cache();
  kiln_image* image = load(cache);
  kiln_image_release(image);
  image_refused_everywhere(image);
  kiln_cache_close(cache);
}

static void image_not_mapped(void) { image_refused_everywhere((kiln_image*)NOT_MAPPED); }

static void image_garbage(void) { image_refused_everywhere((kiln_image*)garbage()); }

static void image_is_a_cache(void) {
  kiln_cache* cache = open_cache();
  image_refused_everywhere((kiln_image*)(void*)cache);
  CHECK(kiln_cache_read_only(cache) == 0); /* untouched */
  kiln_cache_close(cache);
}

static void result_double_free(void) {
  kiln_cache* cache = open_cache();
  kiln_compile_result* r = compile(cache);
  kiln_compile_result_free(r);
  kiln_compile_result_free(r);
  CHECK(strstr(kiln_compile_last_error()->message,
               "kiln_compile_result_free: result is not a live kiln_compile_result") != NULL);
  kiln_cache_close(cache);
}

static void result_use_after_free(void) {
  kiln_cache* cache = open_cache();
  kiln_compile_result* r = compile(cache);
  kiln_compile_result_free(r);
  result_refused_everywhere(r);
  kiln_cache_close(cache);
}

static void result_not_mapped(void) { result_refused_everywhere((kiln_compile_result*)NOT_MAPPED); }

static void result_garbage(void) { result_refused_everywhere((kiln_compile_result*)garbage()); }

static void admin_double_free(void) {
  kiln_cache* cache = open_cache();
  char* json = NULL;
  CHECK(kiln_admin_stats(cache, 0, &json) == KILN_OK && json);
  kiln_admin_free(json);
  kiln_admin_free(json);
  CHECK(says("kiln_admin_free: the pointer is not an answer"));
  kiln_cache_close(cache);
}

static void admin_free_foreign(void) {
  /* Memory the program owns is not freed for it: the free() below would
   * be a second one if kiln_admin_free had freed it. */
  char* own = malloc(64);
  CHECK(own != NULL);
  kiln_admin_free(own);
  CHECK(says("kiln_admin_free: the pointer is not an answer"));
  free(own);
  kiln_admin_free(NOT_MAPPED);
  kiln_admin_free(garbage());
}

static void open_empty_path(void) {
  kiln_cache* cache = (kiln_cache*)NOT_MAPPED;
  CHECK_REFUSED(kiln_cache_open("", &cache), "kiln_cache_open: the path is empty");
  CHECK(cache == NULL);
  cache = (kiln_cache*)NOT_MAPPED;
  CHECK_REFUSED(kiln_cache_open_flags("", KILN_CACHE_READ_ONLY, &cache), "the path is empty");
  CHECK(cache == NULL);
  /* NULL still means the default cache: $KILN_CACHE here. */
  char path[600];
  snprintf(path, sizeof path, "%s/default.db", tmpdir);
  setenv("KILN_CACHE", path, 1);
  CHECK(kiln_cache_open(NULL, &cache) == KILN_OK && cache);
  kiln_cache_close(cache);
  CHECK(access(path, F_OK) == 0);
}

/* struct_size: a size no release has given a struct is refused and nothing
 * is read or written by it; the released size works. */
static void struct_sizes(void) {
  kiln_cache* cache = open_cache();
  union {
    kiln_compile_options o;
    unsigned char bytes[sizeof(kiln_compile_options) + 64];
  } big;
  const size_t sizes[] = {0, 1, 8, sizeof(kiln_compile_options) - 4,
                          sizeof(kiln_compile_options) - 1, sizeof(kiln_compile_options) + 1,
                          sizeof(kiln_compile_options) + 8, sizeof(kiln_compile_options) + 64,
                          4096, (size_t)1 << 40};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    memset(&big, 0, sizeof big);
    big.o = options();
    big.o.struct_size = sizes[i];
    kiln_compile_result* r = (kiln_compile_result*)NOT_MAPPED;
    CHECK_REFUSED(kiln_compile(cache, &big.o, &r), "kiln_compile_options.struct_size is");
    CHECK(r == NULL);
    CHECK(says("not a size any release of kiln_compiler.h gave it"));
    kiln_image* image = (kiln_image*)NOT_MAPPED;
    CHECK_REFUSED(kiln_compile_or_load(cache, &big.o, "collatz", "host", &image, NULL),
                  "kiln_compile_options.struct_size is");
    CHECK(image == NULL);
  }

  /* init with a size no release has writes nothing. */
  memset(&big, 0x5A, sizeof big);
  kiln_compile_options_init_size(&big.o, sizeof(kiln_compile_options) + 8);
  int untouched = 1;
  for (size_t i = 0; i < sizeof big.bytes; ++i)
    untouched &= big.bytes[i] == 0x5A;
  CHECK(untouched);
  CHECK(strstr(kiln_compile_last_error()->message, "kiln_compile_options.struct_size is") != NULL);
  kiln_compile_options_init_size(&big.o, sizeof(kiln_compile_options));
  CHECK(big.o.struct_size == sizeof(kiln_compile_options) && big.o.opt_level == 2);

  /* The result structs, written by the library: refused unless released. */
  kiln_compile_result* r = compile(cache);
  union {
    kiln_job_info j;
    unsigned char bytes[sizeof(kiln_job_info) + 16];
  } job;
  memset(&job, 0x5A, sizeof job);
  job.j.struct_size = sizeof(kiln_job_info) + 8;
  CHECK_REFUSED(kiln_compile_result_job(r, 0, &job.j), "kiln_job_info.struct_size is");
  CHECK(job.bytes[sizeof(kiln_job_info) + 8] == 0x5A && job.j.key != NULL);
  kiln_root_info root = {.struct_size = sizeof root - 8};
  CHECK_REFUSED(kiln_compile_result_root(r, 0, &root), "kiln_root_info.struct_size is");
  kiln_library_info lib = {.struct_size = 3};
  CHECK_REFUSED(kiln_compile_result_library(r, 0, &lib), "kiln_library_info.struct_size is");
  job.j.struct_size = sizeof(kiln_job_info);
  CHECK(kiln_compile_result_job(r, 0, &job.j) == KILN_OK && strlen(job.j.key) == 32);
  kiln_compile_result_free(r);
  kiln_cache_close(cache);
}

/* The same calls on live handles still work: the checks refuse nothing. */
static void live_handles_work(void) {
  kiln_cache* cache = open_cache();
  CHECK(kiln_cache_read_only(cache) == 0);
  size_t problems = 1;
  CHECK(kiln_cache_verify(cache, &problems) == KILN_OK && problems == 0);
  kiln_image* image = load(cache);
  void* fn = NULL;
  CHECK(kiln_image_lookup(image, "collatz", &fn) == KILN_OK && fn);
  int64_t (*collatz)(int64_t);
  memcpy(&collatz, &fn, sizeof collatz);
  CHECK(collatz(27) == 111);
  CHECK(kiln_image_module(image) != NULL);
  CHECK(strcmp(kiln_image_target(image), "host") == 0);
  kiln_compile_result* r = compile(cache);
  CHECK(kiln_compile_result_ok(r) && kiln_compile_result_job_count(r) == 8);
  kiln_compile_result_free(r);
  char* json = NULL;
  CHECK(kiln_admin_ls(cache, NULL, NULL, &json) == KILN_OK && strstr(json, "collatz"));
  kiln_admin_free(json);
  kiln_image_release(image);
  kiln_cache_close(cache);
  /* Many handles at once, ended in another order than made. */
  enum { kMany = 200 };
  kiln_cache* caches[8];
  for (int i = 0; i < 8; ++i)
    caches[i] = open_cache();
  static kiln_image* images[kMany];
  for (int i = 0; i < kMany; ++i)
    images[i] = load(caches[i % 8]);
  for (int i = 0; i < kMany; i += 2)
    kiln_image_release(images[i]);
  for (int i = 1; i < kMany; i += 2)
    CHECK(kiln_image_lookup(images[i], "collatz", &fn) == KILN_OK);
  for (int i = 1; i < kMany; i += 2)
    kiln_image_release(images[i]);
  for (int i = 7; i >= 0; --i)
    kiln_cache_close(caches[i]);
}

/* --- the runner ------------------------------------------------------------- */

static void setup(void) {
  kiln_cache* cache = open_cache();
  kiln_compile_result* r = compile(cache);
  if (!kiln_compile_result_ok(r)) {
    fprintf(stderr, "the example did not compile\n");
    exit(1);
  }
  kiln_compile_result_free(r);
  kiln_cache_close(cache);
}

struct test_case {
  const char* name;
  void (*run)(void);
};

static const struct test_case cases[] = {
    {"cache_double_close", cache_double_close},
    {"cache_use_after_close", cache_use_after_close},
    {"cache_not_mapped", cache_not_mapped},
    {"cache_garbage", cache_garbage},
    {"cache_is_an_image", cache_is_an_image},
    {"image_double_release", image_double_release},
    {"image_use_after_release", image_use_after_release},
    {"image_not_mapped", image_not_mapped},
    {"image_garbage", image_garbage},
    {"image_is_a_cache", image_is_a_cache},
    {"result_double_free", result_double_free},
    {"result_use_after_free", result_use_after_free},
    {"result_not_mapped", result_not_mapped},
    {"result_garbage", result_garbage},
    {"admin_double_free", admin_double_free},
    {"admin_free_foreign", admin_free_foreign},
    {"open_empty_path", open_empty_path},
    {"struct_sizes", struct_sizes},
    {"live_handles_work", live_handles_work},
};

/* Runs `run` in a child: 0 if it passed, else 1 with a line saying how it
 * failed (its checks, its exit status or the signal that ended it). */
static int in_child(const char* name, void (*run)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(1);
  }
  if (pid == 0) {
    alarm(60);
    run();
    fflush(NULL);
    _exit(failures ? 1 : 0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    perror("waitpid");
    exit(1);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    printf("ok   %s\n", name);
    return 0;
  }
  if (WIFSIGNALED(status))
    printf("FAIL %s: killed by signal %d\n", name, WTERMSIG(status));
  else
    printf("FAIL %s: exit status %d\n", name, WEXITSTATUS(status));
  return 1;
}

static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = malloc((size_t)n);
  if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: kiln_embed_misuse EXAMPLES_DIR\n");
    return 2;
  }
  char path[512];
  snprintf(path, sizeof path, "%s/deferred.ll", argv[1]);
  example.name = "deferred.ll";
  example.data = read_file(path, &example.size);
  const char* base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/kiln-misuse-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(cache_path, sizeof cache_path, "%s/misuse.db", tmpdir);
  /* Compiled in a child too: the cases' children fork from a process that
   * never ran a compile's threads. */
  if (in_child("setup", setup) != 0)
    return 1;

  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i)
    failed += in_child(cases[i].name, cases[i].run);

  char rm[600];
  snprintf(rm, sizeof rm, "rm -rf '%s'", tmpdir);
  if (system(rm) != 0)
    fprintf(stderr, "could not remove %s\n", tmpdir);
  free((void*)example.data);
  if (failed)
    printf("%d of %zu cases failed\n", failed, sizeof cases / sizeof *cases);
  else
    printf("all %zu cases passed\n", sizeof cases / sizeof *cases);
  return failed ? 1 : 0;
}
