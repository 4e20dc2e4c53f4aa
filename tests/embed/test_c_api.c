/* The compiler C API (kiln/kiln_compiler.h), in plain C, end to end: compile
 * IR held in memory into a fresh cache, compile-or-load (miss, then hit) and
 * call the results, structured errors, several buffers, argument checks, and
 * several threads compiling and loading through one cache handle. Then the
 * admin API (kiln/admin.h) over what was compiled.
 *
 *   kiln_embed_c_tests EXAMPLES_DIR
 *
 * Prints one line per check that fails and the hit/miss timings; exits
 * non-zero if any check failed. */
#include <kiln/admin.h>
#include <kiln/kiln_compiler.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;

/* Each evaluates its condition once; REQUIRE stops the program. */
static int check(int ok, const char* what, int line, int fatal) {
  if (!ok) {
    fprintf(stderr, "%s:%d: %s failed; last error: %s\n", __FILE__, line, what,
            kiln_compile_last_error()->message);
    ++failures;
    if (fatal)
      exit(1);
  }
  return ok;
}
#define CHECK(cond) check((cond) != 0, "CHECK(" #cond ")", __LINE__, 0)
#define REQUIRE(cond) check((cond) != 0, "REQUIRE(" #cond ")", __LINE__, 1)

typedef int64_t (*i64_fn)(int64_t);
typedef double (*saxpy_fn)(double, double, double);

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

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char tmpdir[256];

static kiln_cache* open_fresh(const char* name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.db", tmpdir, name);
  kiln_cache* cache = NULL;
  REQUIRE(kiln_cache_open(path, &cache) == KILN_OK);
  return cache;
}

static void* lookup(kiln_image* image, const char* name) {
  void* p = NULL;
  CHECK(kiln_image_lookup(image, name, &p) == KILN_OK);
  return p;
}

static i64_fn as_i64_fn(void* p) {
  i64_fn f;
  memcpy(&f, &p, sizeof f);
  return f;
}

static kiln_source example;

/* Every root of the example, compiled, then again: all cached. */
static void test_compile(void) {
  kiln_cache* cache = open_fresh("compile");
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &example;
  o.source_count = 1;
  kiln_compile_result* r = NULL;
  REQUIRE(kiln_compile(cache, &o, &r) == KILN_OK);
  CHECK(kiln_compile_result_ok(r));
  size_t n = kiln_compile_result_job_count(r);
  CHECK(n == 8); /* scale, axpy, saxpy_like, fib, fib_calls, collatz and its two helpers */
  size_t refs = 0;
  for (size_t i = 0; i < n; ++i) {
    kiln_job_info j = {.struct_size = sizeof(kiln_job_info)};
    REQUIRE(kiln_compile_result_job(r, i, &j) == KILN_OK);
    CHECK(strlen(j.key) == 32);
    CHECK(j.status == KILN_JOB_COMPILED);
    CHECK(strcmp(j.target, "host") == 0);
    CHECK(strcmp(j.error, "") == 0);
    for (size_t k = 0; k < j.ref_count; ++k) {
      const char *symbol, *key;
      CHECK(kiln_compile_result_job_ref(r, i, k, &symbol, &key) == KILN_OK);
      CHECK(strlen(key) == 32 && *symbol);
      ++refs;
    }
    CHECK(kiln_compile_result_job_ref(r, i, j.ref_count, &(const char*){0}, &(const char*){0}) ==
          KILN_NOT_FOUND);
  }
  CHECK(refs == 8); /* collatz 2; axpy, saxpy_like, fib, fib_calls and collatz's helpers 1 each */
  CHECK(kiln_compile_result_root_count(r) == 8);
  kiln_root_info root = {.struct_size = sizeof(kiln_root_info)};
  REQUIRE(kiln_compile_result_root(r, 0, &root) == KILN_OK);
  CHECK(strlen(root.closure) == 32 && root.has_image && strcmp(root.error, "") == 0);
  kiln_job_info past = {.struct_size = sizeof(kiln_job_info)};
  CHECK(kiln_compile_result_job(r, n, &past) == KILN_NOT_FOUND);
  kiln_compile_result_free(r);

  /* The same unit again: every job is a hit, and the loader loads it. */
  r = NULL;
  REQUIRE(kiln_compile(cache, &o, &r) == KILN_OK);
  for (size_t i = 0; i < kiln_compile_result_job_count(r); ++i) {
    kiln_job_info j = {.struct_size = sizeof(kiln_job_info)};
    CHECK(kiln_compile_result_job(r, i, &j) == KILN_OK && j.status == KILN_JOB_CACHED);
  }
  kiln_compile_result_free(r);
  kiln_image* image = NULL;
  REQUIRE(kiln_image_load(cache, "collatz", "host", &image) == KILN_OK);
  CHECK(as_i64_fn(lookup(image, "collatz"))(27) == 111);
  kiln_image_release(image);
  kiln_cache_close(cache);
}

/* The JIT's call: a miss compiles, a hit compiles nothing; both run. */
static void test_compile_or_load(void) {
  /* NULL: the present device, which is the host unless a GPU is there. */
  const char* host = strcmp(kiln_present_target(), "host") == 0 ? NULL : "host";
  kiln_cache* cache = open_fresh("jit");
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &example;
  o.source_count = 1;
  double times[2];
  for (int round = 0; round < 2; ++round) {
    kiln_image* image = NULL;
    kiln_compile_result* report = NULL;
    double start = now_ms();
    REQUIRE(kiln_compile_or_load(cache, &o, "fib_calls", host, &image, &report) == KILN_OK);
    times[round] = now_ms() - start;
    CHECK(strcmp(kiln_image_target(image), "host") == 0);
    /* fib_calls's closure holds fib_calls and fib (the deferred child). */
    CHECK(kiln_compile_result_job_count(report) == 2);
    for (size_t i = 0; i < kiln_compile_result_job_count(report); ++i) {
      kiln_job_info j = {.struct_size = sizeof(kiln_job_info)};
      CHECK(kiln_compile_result_job(report, i, &j) == KILN_OK);
      CHECK(j.status == (round == 0 ? KILN_JOB_COMPILED : KILN_JOB_CACHED));
    }
    CHECK(as_i64_fn(lookup(image, "fib_calls"))(10) == 177);
    CHECK(as_i64_fn(lookup(image, "fib"))(20) == 6765);
    kiln_compile_result_free(report);
    kiln_image_release(image);
  }
  printf("compile-or-load fib_calls (examples/deferred.ll, host): miss %.1f ms, hit %.2f ms\n",
         times[0], times[1]);

  /* Without a report, and for a named target. */
  kiln_image* image = NULL;
  REQUIRE(kiln_compile_or_load(cache, &o, "saxpy_like", "host", &image, NULL) == KILN_OK);
  saxpy_fn saxpy;
  void* p = lookup(image, "saxpy_like");
  memcpy(&saxpy, &p, sizeof saxpy);
  CHECK(saxpy(2, 3, 4) == 10.0);
  kiln_image_release(image);

  /* Entries and targets belong to the call, not the options. */
  const char* entries[] = {"fib"};
  o.entries = entries;
  o.entry_count = 1;
  CHECK(kiln_compile_or_load(cache, &o, "fib", NULL, &image, NULL) == KILN_INVALID_ARGUMENT);
  CHECK(image == NULL);
  kiln_cache_close(cache);
}

/* Input errors carry the buffer, line, entry or target, and write nothing. */
static void test_errors(void) {
  kiln_cache* cache = open_fresh("errors");
  const char bad[] = "define i64 @f(i64 %n) {\n  %r = add i64 %n, %undefined_value\n  ret i64 %r\n}\n";
  kiln_source src = {"bad.ll", bad, sizeof bad - 1};
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &src;
  o.source_count = 1;
  kiln_compile_result* r = NULL;
  CHECK(kiln_compile(cache, &o, &r) == KILN_INVALID_ARGUMENT);
  CHECK(r == NULL);
  const kiln_error_info* e = kiln_compile_last_error();
  CHECK(e->status == KILN_INVALID_ARGUMENT);
  CHECK(strcmp(e->source, "bad.ll") == 0);
  CHECK(e->line == 2);
  CHECK(e->column > 0);
  CHECK(strstr(e->message, "undefined_value") != NULL);
  /* Fields the failure does not concern are empty, never NULL. */
  CHECK(strcmp(e->entry, "") == 0 && strcmp(e->target, "") == 0 && strcmp(e->job, "") == 0);
  kiln_image* image = NULL;
  CHECK(kiln_compile_or_load(cache, &o, "f", NULL, &image, NULL) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_compile_last_error()->line == 2);

  /* A missing entry names it. */
  o.sources = &example;
  const char* missing[] = {"no_such_kernel"};
  o.entries = missing;
  o.entry_count = 1;
  CHECK(kiln_compile(cache, &o, &r) == KILN_INVALID_ARGUMENT);
  CHECK(strcmp(kiln_compile_last_error()->entry, "no_such_kernel") == 0);

  /* An unknown target names it. */
  o.entries = NULL;
  o.entry_count = 0;
  const char* targets[] = {"sm_1"};
  o.targets = targets;
  o.target_count = 1;
  CHECK(kiln_compile(cache, &o, &r) == KILN_INVALID_ARGUMENT);
  CHECK(strcmp(kiln_compile_last_error()->target, "sm_1") == 0);
  CHECK(kiln_compile_or_load(cache, &o, "fib", NULL, &image, NULL) == KILN_INVALID_ARGUMENT);
  o.targets = NULL;
  o.target_count = 0;
  CHECK(kiln_compile_or_load(cache, &o, "fib", "sm_1", &image, NULL) == KILN_INVALID_ARGUMENT);
  CHECK(strcmp(kiln_compile_last_error()->target, "sm_1") == 0);

  /* A bad kiln_deferred names the parent job. */
  const char deferred[] = "declare ptr @kiln_deferred(ptr)\n@g = global i64 0\n"
                          "define ptr @parent() {\n  %p = call ptr @kiln_deferred(ptr @g)\n"
                          "  ret ptr %p\n}\n";
  kiln_source dsrc = {"deferred_bad.ll", deferred, sizeof deferred - 1};
  o.sources = &dsrc;
  CHECK(kiln_compile(cache, &o, &r) == KILN_INVALID_ARGUMENT);
  CHECK(strcmp(kiln_compile_last_error()->entry, "parent") == 0);
  CHECK(strcmp(kiln_compile_last_error()->target, "host") == 0);

  /* Optimization level out of range. */
  o.sources = &example;
  o.opt_level = 7;
  CHECK(kiln_compile(cache, &o, &r) == KILN_INVALID_ARGUMENT);
  CHECK(strstr(kiln_compile_last_error()->message, "0..3") != NULL);
  o.opt_level = 2;

  /* Argument checks name the argument. */
  CHECK(kiln_compile(cache, NULL, &r) == KILN_INVALID_ARGUMENT);
  CHECK(strstr(kiln_compile_last_error()->message, "options") != NULL);
  o.sources = NULL;
  CHECK(kiln_compile(cache, &o, &r) == KILN_INVALID_ARGUMENT);
  CHECK(strstr(kiln_compile_last_error()->message, "sources is NULL") != NULL);
  kiln_source nodata = {"empty.ll", NULL, 5};
  o.sources = &nodata;
  CHECK(kiln_compile(cache, &o, &r) == KILN_INVALID_ARGUMENT);
  CHECK(strstr(kiln_compile_last_error()->message, "empty.ll") != NULL);
  CHECK(kiln_compile_or_load(cache, &o, NULL, NULL, &image, NULL) == KILN_INVALID_ARGUMENT);

  /* Nothing was written by any of it. */
  CHECK(kiln_image_load(cache, "f", "host", &image) == KILN_NOT_FOUND);
  CHECK(kiln_image_load(cache, "fib", "host", &image) == KILN_NOT_FOUND);

  /* A success clears the last error. */
  o.sources = &example;
  CHECK(kiln_compile_or_load(cache, &o, "scale", "host", &image, NULL) == KILN_OK);
  CHECK(kiln_compile_last_error()->status == KILN_OK);
  CHECK(strcmp(kiln_compile_last_error()->job, "") == 0);
  kiln_image_release(image);
  kiln_cache_close(cache);
}

/* Two buffers linked into one unit; an unnamed buffer gets a name. */
static void test_buffers(void) {
  kiln_cache* cache = open_fresh("buffers");
  const char a[] = "declare i64 @twice(i64)\n"
                   "define i64 @quad(i64 %x) {\n  %y = call i64 @twice(i64 %x)\n"
                   "  %z = call i64 @twice(i64 %y)\n  ret i64 %z\n}\n";
  const char b[] = "define i64 @twice(i64 %x) {\n  %y = add i64 %x, %x\n  ret i64 %y\n}\n";
  kiln_source srcs[2] = {{"a.ll", a, sizeof a - 1}, {NULL, b, sizeof b - 1}};
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = srcs;
  o.source_count = 2;
  o.opt_level = 0;
  kiln_image* image = NULL;
  REQUIRE(kiln_compile_or_load(cache, &o, "quad", "host", &image, NULL) == KILN_OK);
  CHECK(as_i64_fn(lookup(image, "quad"))(5) == 20);
  kiln_image_release(image);

  const char broken[] = "define i64 @twice(i64 %x) {\n  ret i64 %missing\n}\n";
  srcs[1].data = broken;
  srcs[1].size = sizeof broken - 1;
  CHECK(kiln_compile_or_load(cache, &o, "quad", NULL, &image, NULL) == KILN_INVALID_ARGUMENT);
  CHECK(strcmp(kiln_compile_last_error()->source, "buffer1") == 0);
  CHECK(kiln_compile_last_error()->line == 2);
  kiln_cache_close(cache);
}

/* Several threads compile and load through one handle, on the same and on
 * different roots; each checks its own results. */
enum { kThreads = 4, kRounds = 3 };
static kiln_cache* shared_cache;
static int thread_failures[kThreads];

static void* worker(void* arg) {
  int id = (int)(intptr_t)arg;
  static const char* roots[] = {"fib", "collatz", "fib", "fib_calls"};
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &example;
  o.source_count = 1;
  o.jobs = 1;
  for (int round = 0; round < kRounds; ++round) {
    const char* root = roots[(id + round) % kThreads];
    kiln_image* image = NULL;
    if (kiln_compile_or_load(shared_cache, &o, root, "host", &image, NULL) != KILN_OK) {
      fprintf(stderr, "thread %d: %s: %s\n", id, root, kiln_compile_last_error()->message);
      ++thread_failures[id];
      continue;
    }
    void* p = NULL;
    if (kiln_image_lookup(image, root, &p) != KILN_OK) {
      ++thread_failures[id];
    } else {
      int64_t want = strcmp(root, "fib") == 0 ? 6765 : strcmp(root, "collatz") == 0 ? 111 : 177;
      int64_t arg_ = strcmp(root, "fib") == 0 ? 20 : strcmp(root, "collatz") == 0 ? 27 : 10;
      if (as_i64_fn(p)(arg_) != want)
        ++thread_failures[id];
    }
    kiln_image_release(image);
  }
  return NULL;
}

static void test_threads(void) {
  shared_cache = open_fresh("threads");
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i)
    REQUIRE(pthread_create(&t[i], NULL, worker, (void*)(intptr_t)i) == 0);
  for (int i = 0; i < kThreads; ++i)
    pthread_join(t[i], NULL);
  for (int i = 0; i < kThreads; ++i)
    CHECK(thread_failures[i] == 0);
  kiln_cache_close(shared_cache);
}

/* The JSON `json` has `want` in it; freed either way. */
static int json_has(char* json, const char* want) {
  int ok = json && strstr(json, want) != NULL;
  if (!ok)
    fprintf(stderr, "expected %s in %s\n", want, json ? json : "(null)");
  kiln_admin_free(json);
  return ok;
}

/* The 32 hex digits after `"field":"` in `json`, into `out`. */
static int json_key(const char* json, const char* field, char out[33]) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", field);
  const char* at = json ? strstr(json, pattern) : NULL;
  if (!at || strlen(at + strlen(pattern)) < 32)
    return 0;
  memcpy(out, at + strlen(pattern), 32);
  out[32] = '\0';
  return 1;
}

/* kiln-inspect's subcommands as C calls, each answering with its JSON. */
static void test_admin(void) {
  char path[512], bundle[512];
  snprintf(path, sizeof path, "%s/admin.db", tmpdir);
  snprintf(bundle, sizeof bundle, "%s/admin.kbundle", tmpdir);
  kiln_cache* cache = open_fresh("admin");
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &example;
  o.source_count = 1;
  kiln_compile_result* r = NULL;
  REQUIRE(kiln_compile(cache, &o, &r) == KILN_OK);
  kiln_compile_result_free(r);

  char* json = NULL;
  CHECK(kiln_admin_ls(cache, NULL, NULL, &json) == KILN_OK);
  CHECK(json_has(json, "\"name\":\"collatz\""));
  CHECK(kiln_admin_ls(cache, "host", "fib*", &json) == KILN_OK);
  CHECK(json_has(json, "\"name\":\"fib_calls\""));
  CHECK(kiln_admin_show(cache, "collatz", NULL, &json) == KILN_OK);
  char job[33] = {0}, closure[33] = {0};
  CHECK(json_key(json, "root_job", job) && json_key(json, "closure", closure));
  CHECK(json_has(json, "\"kind\":\"root\""));
  CHECK(kiln_admin_show(cache, job, NULL, &json) == KILN_OK);
  CHECK(json_has(json, "\"kind\":\"job\""));
  CHECK(kiln_admin_show(cache, "no_such_root", NULL, &json) == KILN_NOT_FOUND && json == NULL);
  CHECK(kiln_admin_graph(cache, closure, NULL, &json) == KILN_OK);
  CHECK(json_has(json, "\"edges\":[{"));
  CHECK(kiln_admin_stats(cache, 0, &json) == KILN_OK);
  CHECK(json_has(json, "\"jobs\":8,"));
  CHECK(kiln_admin_verify(cache, &json) == KILN_OK);
  CHECK(json_has(json, "\"ok\":true"));
  CHECK(kiln_admin_libraries(cache, &json) == KILN_OK);
  CHECK(json_has(json, "[]"));
  CHECK(kiln_admin_library(cache, "none", NULL, &json) == KILN_NOT_FOUND);

  void* bytes = NULL;
  size_t size = 0;
  CHECK(kiln_admin_dump(cache, job, "object", &bytes, &size) == KILN_OK);
  CHECK(size > 4 && memcmp(bytes, "\177ELF", 4) == 0);
  kiln_admin_free(bytes);
  CHECK(kiln_admin_dump(cache, job, "nonsense", &bytes, &size) == KILN_INVALID_ARGUMENT);

  CHECK(kiln_admin_explain(cache, job, job, &json) == KILN_OK);
  CHECK(json_has(json, "\"same\":true"));
  CHECK(kiln_admin_explain(cache, "not-a-key", job, &json) == KILN_INVALID_ARGUMENT);

  CHECK(kiln_admin_config(cache, NULL, NULL, &json) == KILN_OK);
  CHECK(json_has(json, "\"max_size_source\":\"default\""));
  CHECK(kiln_admin_config(cache, "max_size", "1G", &json) == KILN_OK);
  CHECK(json_has(json, "\"max_size\":1073741824,\"max_size_source\":\"cache setting\""));
  CHECK(kiln_admin_config(cache, "no_such_setting", "1", &json) == KILN_INVALID_ARGUMENT);

  CHECK(kiln_admin_gc(cache, "1K", NULL, 1, &json) == KILN_OK);
  CHECK(json_has(json, "\"dry_run\":true"));
  CHECK(kiln_admin_gc(cache, "lots", NULL, 1, &json) == KILN_INVALID_ARGUMENT);

  const char* which[] = {"collatz"};
  CHECK(kiln_admin_export(cache, bundle, which, 1, &json) == KILN_OK);
  CHECK(json_has(json, "\"closures\":1,"));
  CHECK(kiln_admin_check_portable(NULL, bundle, &json) == KILN_OK);
  CHECK(json_has(json, "\"closures\":1,\"loadable\":1,"));
  CHECK(kiln_admin_check_portable(cache, NULL, &json) == KILN_OK);
  CHECK(json_has(json, "\"not_loadable\":0"));
  kiln_cache* other = open_fresh("admin-import");
  CHECK(kiln_admin_import(other, bundle, &json) == KILN_OK);
  CHECK(json_has(json, "\"closures\":1,"));
  CHECK(kiln_admin_show(other, "collatz", "host", &json) == KILN_OK);
  CHECK(json_has(json, closure));
  kiln_cache_close(other);

  /* A read-only handle reads, and refuses every call that writes. */
  kiln_cache* ro = NULL;
  REQUIRE(kiln_cache_open_flags(path, KILN_CACHE_READ_ONLY, &ro) == KILN_OK);
  CHECK(kiln_admin_stats(ro, 0, &json) == KILN_OK);
  kiln_admin_free(json);
  CHECK(kiln_admin_stats(ro, 1, &json) == KILN_UNAVAILABLE && json == NULL);
  CHECK(kiln_admin_gc(ro, "1K", NULL, 0, &json) == KILN_UNAVAILABLE);
  CHECK(kiln_admin_import(ro, bundle, &json) == KILN_UNAVAILABLE);
  CHECK(kiln_admin_config(ro, "max_size", "2G", &json) == KILN_UNAVAILABLE);
  /* Refused as read-only before the arguments are read. */
  CHECK(kiln_admin_gc(ro, "lots", NULL, 1, &json) == KILN_UNAVAILABLE);
  CHECK(kiln_admin_config(ro, "max_size", "bogus", &json) == KILN_UNAVAILABLE);
  kiln_cache_close(ro);

  /* The file alone: a remote the environment names is not even parsed. */
  setenv("KILN_REMOTE", "bogus://nowhere", 1);
  kiln_cache* bad = NULL;
  CHECK(kiln_cache_open(path, &bad) == KILN_INVALID_ARGUMENT && bad == NULL);
  kiln_cache* local = NULL;
  CHECK(kiln_cache_open_flags(path, KILN_CACHE_LOCAL_ONLY, &local) == KILN_OK);
  CHECK(kiln_admin_stats(local, 0, &json) == KILN_OK);
  kiln_admin_free(json);
  kiln_cache_close(local);
  unsetenv("KILN_REMOTE");

  /* gc for real: everything goes, and the cache says so. */
  CHECK(kiln_admin_gc(cache, "1K", NULL, 0, &json) == KILN_OK);
  CHECK(json_has(json, "\"dry_run\":false"));
  CHECK(kiln_admin_stats(cache, 0, &json) == KILN_OK);
  CHECK(json_has(json, "\"closures\":0,"));
  CHECK(kiln_admin_ls(NULL, NULL, NULL, &json) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_admin_ls(cache, NULL, NULL, NULL) == KILN_INVALID_ARGUMENT);
  kiln_cache_close(cache);
}

static void remove_tree(const char* dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "cannot remove %s\n", dir);
}

/* The loaded library says which it is: the version CMake built, and the
 * ABI these headers were compiled against. */
static void test_version(void) {
  CHECK(strcmp(kiln_version(), KILN_EXPECTED_VERSION) == 0);
  CHECK(kiln_abi_version() == KILN_ABI_VERSION);
  CHECK(kiln_compiler_abi_version() == KILN_COMPILER_ABI_VERSION);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: kiln_embed_c_tests EXAMPLES_DIR\n");
    return 2;
  }
  char path[512];
  snprintf(path, sizeof path, "%s/deferred.ll", argv[1]);
  example.name = "deferred.ll";
  example.data = read_file(path, &example.size);
  const char* base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/kiln-embed-XXXXXX", base && *base ? base : "/tmp");
  REQUIRE(mkdtemp(tmpdir) != NULL);

  test_version();
  test_compile();
  test_compile_or_load();
  test_errors();
  test_buffers();
  test_threads();
  test_admin();

  remove_tree(tmpdir);
  free((void*)example.data);
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  else
    printf("all checks passed\n");
  return failures ? 1 : 0;
}
