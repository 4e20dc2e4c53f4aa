/* A C front end embedding Kiln through pkg-config (kiln-compiler): compile a
 * unit held in memory with kiln_compile, load it with the loader, call it.
 *   consumer_c CACHE_PATH */
#include <kiln/kiln_compiler.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unit.inc"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer_c CACHE_PATH\n");
    return 2;
  }
  kiln_cache* cache = NULL;
  if (kiln_cache_open(argv[1], &cache) != KILN_OK) {
    fprintf(stderr, "consumer_c: %s\n", kiln_last_error());
    return 1;
  }
  kiln_source source = {"unit.ll", kUnit, sizeof kUnit - 1};
  const char* entries[] = {"sum_squares"};
  kiln_compile_options options;
  kiln_compile_options_init(&options);
  options.sources = &source;
  options.source_count = 1;
  options.entries = entries;
  options.entry_count = 1;

  kiln_compile_result* result = NULL;
  int rc = 1;
  if (kiln_compile(cache, &options, &result) != KILN_OK) {
    fprintf(stderr, "consumer_c: %s\n", kiln_compile_last_error()->message);
  } else {
    size_t compiled = 0;
    for (size_t i = 0; i < kiln_compile_result_job_count(result); ++i) {
      kiln_job_info job = {.struct_size = sizeof(kiln_job_info)};
      if (kiln_compile_result_job(result, i, &job) == KILN_OK && job.status == KILN_JOB_COMPILED)
        ++compiled;
    }
    kiln_image* image = NULL;
    void* address = NULL;
    if (kiln_image_load(cache, "sum_squares", "host", &image) != KILN_OK ||
        kiln_image_lookup(image, "sum_squares", &address) != KILN_OK) {
      fprintf(stderr, "consumer_c: %s\n", kiln_last_error());
    } else {
      int64_t (*sum_squares)(int64_t);
      memcpy(&sum_squares, &address, sizeof sum_squares);
      printf("c: sum_squares(10) = %lld (%zu of %zu jobs compiled)\n",
             (long long)sum_squares(10), compiled, kiln_compile_result_job_count(result));
      rc = 0;
    }
    if (image)
      kiln_image_release(image);
    kiln_compile_result_free(result);
  }
  kiln_cache_close(cache);
  return rc;
}
