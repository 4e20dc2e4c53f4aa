/* GPU check, for a machine with an NVIDIA GPU: loads the sm_90 images of
 * tests/data/gpu_nvptx.ll's kernels through Kiln, launches them with the
 * CUDA driver API and compares results; times the load from the cached
 * image. Usage: gpu_check CACHE. Prints "gpu_check: N passed, M failed". */
#include <kiln/kiln.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef int (*MemAlloc)(uint64_t*, size_t);
typedef int (*MemcpyDtoH)(void*, uint64_t, size_t);
typedef int (*MemFree)(uint64_t);
typedef int (*Launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                      unsigned, void*, void**, void**);
typedef int (*Sync)(void);

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  const char* names[] = {"k_nested", "k_fact", "k_cycle"};
  const int args[] = {20, 6, 7};
  const int expect[] = {42, 720, 777}; /* (20+1)*2, 6!, d_ca(7) round the cycle */
  int passed = 0, failed = 0;
  kiln_cache* cache;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (argc < 2 || !cuda || kiln_cache_open(argv[1], &cache) != KILN_OK) {
    fprintf(stderr, "gpu_check: need a cache argument and libcuda.so.1 (%s)\n", kiln_last_error());
    return 2;
  }
  MemAlloc mem_alloc = (MemAlloc)dlsym(cuda, "cuMemAlloc_v2");
  MemcpyDtoH dtoh = (MemcpyDtoH)dlsym(cuda, "cuMemcpyDtoH_v2");
  MemFree mem_free = (MemFree)dlsym(cuda, "cuMemFree_v2");
  Launch launch = (Launch)dlsym(cuda, "cuLaunchKernel");
  Sync sync = (Sync)dlsym(cuda, "cuCtxSynchronize");
  for (int i = 0; i < 3; ++i) {
    kiln_image* image;
    void* fn;
    double t0 = now_ms();
    if (kiln_image_load(cache, names[i], "sm_90", &image) != KILN_OK ||
        kiln_image_lookup(image, names[i], &fn) != KILN_OK) {
      printf("%s: load failed: %s\n", names[i], kiln_last_error());
      ++failed;
      continue;
    }
    double load_ms = now_ms() - t0;
    uint64_t out = 0;
    int host[2] = {0, 0};
    int n = args[i];
    void* params[] = {&out, &n};
    int rc = mem_alloc(&out, sizeof host);
    if (!rc)
      rc = launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    if (!rc)
      rc = sync();
    if (!rc)
      rc = dtoh(host, out, sizeof host);
    mem_free(out);
    int ok = !rc && host[0] == expect[i];
    printf("%s(%d) = %d (expected %d), load from cached image %.3f ms%s\n", names[i], n, host[0],
           expect[i], load_ms, ok ? "" : "  FAILED");
    ok ? ++passed : ++failed;
    kiln_image_release(image);
  }
  kiln_cache_close(cache);
  printf("gpu_check: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
