/* The kernel suite on an NVIDIA GPU: loads each CUDA kernel of
 * tests/kernels/cuda from a Kiln cache through the loader C API (libkiln
 * only, no LLVM), launches it through the CUDA driver API (libcuda.so.1,
 * dlopen'd) and compares its output with the CPU's, device printf text
 * included. Usage: kernels_gpu CACHE [TARGET] (TARGET: the device's sm_XY by
 * default; the wgmma kernel is loaded for sm_90a on a compute 9.0 device).
 * Prints one line per check and "kernels_gpu: N passed, M failed"; exits 0
 * when all pass, 1 when one fails, 77 when there is no CUDA driver or GPU. */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void* CUfunction;
typedef void* CUmodule;

static struct {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(int*, int);
  CUresult (*attribute)(int*, int, int);
  CUresult (*primary_ctx_retain)(void**, int);
  CUresult (*ctx_set_current)(void*);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*htod)(CUdeviceptr, const void*, size_t);
  CUresult (*dtoh)(void*, CUdeviceptr, size_t);
  CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, void*, void**, void**);
  CUresult (*launch_cooperative)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, void*, void**);
  CUresult (*sync)(void);
  CUresult (*module_get_global)(CUdeviceptr*, size_t*, CUmodule, const char*);
  CUresult (*error_name)(CUresult, const char**);
} cu;

enum { CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76 };

static kiln_cache* cache;
static char target[16], target_a[24];
static int passed, failed;

__attribute__((format(printf, 3, 4))) static void result(int ok, const char* what,
                                                          const char* fmt, ...) {
  va_list ap;
  printf("%-40s %s", what, ok ? "ok" : "FAILED");
  if (fmt && *fmt) {
    printf("  ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
  }
  printf("\n");
  fflush(stdout);
  ok ? ++passed : ++failed;
}

static const char* cu_error(CUresult rc) {
  const char* name = "unknown CUresult";
  if (cu.error_name)
    cu.error_name(rc, &name);
  return name;
}

/* A kernel loaded from its root's image. */
typedef struct {
  kiln_image* image;
  CUfunction fn;
  CUmodule module;
} Kernel;

static int load_for(const char* name, const char* spec, Kernel* k) {
  if (kiln_image_load(cache, name, spec, &k->image) != KILN_OK) {
    result(0, name, "load for %s: %s", spec, kiln_last_error());
    return 0;
  }
  if (kiln_image_lookup(k->image, name, &k->fn) != KILN_OK) {
    result(0, name, "lookup: %s", kiln_last_error());
    kiln_image_release(k->image);
    return 0;
  }
  k->module = kiln_image_module(k->image);
  return 1;
}

static int load(const char* name, Kernel* k) { return load_for(name, target, k); }

static void release(Kernel* k) { kiln_image_release(k->image); }

static CUresult run(Kernel* k, unsigned grid, unsigned block, unsigned shared, void** params) {
  CUresult rc = cu.launch(k->fn, grid, 1, 1, block, 1, 1, shared, NULL, params, NULL);
  return rc ? rc : cu.sync();
}

static CUdeviceptr upload(const void* host, size_t bytes) {
  CUdeviceptr d = 0;
  if (cu.mem_alloc(&d, bytes) == 0 && host)
    cu.htod(d, host, bytes);
  else if (d)
    cu.memset_d8(d, 0, bytes);
  return d;
}

static void download(void* host, CUdeviceptr d, size_t bytes) { cu.dtoh(host, d, bytes); }

/* Runs a launch with stdout sent to a temporary file and returns what the
 * device printed (the driver writes device printf output at the sync). */
static char* captured_run(Kernel* k, unsigned grid, unsigned block, void** params, CUresult* rc) {
  char path[] = "/tmp/kiln-kernels-gpu.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    *rc = -1;
    return NULL;
  }
  fflush(stdout);
  int saved = dup(1);
  dup2(fd, 1);
  *rc = run(k, grid, block, 0, params);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  off_t size = lseek(fd, 0, SEEK_END);
  char* text = calloc(1, (size_t)size + 1);
  if (text && pread(fd, text, (size_t)size, 0) != size)
    text[0] = 0;
  close(fd);
  unlink(path);
  return text;
}

static int count_line(const char* text, const char* line) {
  int n = 0;
  size_t len = strlen(line);
  for (const char* p = text; (p = strstr(p, line)) != NULL; p += len)
    if ((p == text || p[-1] == '\n') && (p[len] == '\n' || p[len] == 0))
      ++n;
  return n;
}

static int count_lines(const char* text) {
  int n = 0;
  for (const char* p = text; *p; ++p)
    n += *p == '\n';
  return n;
}

/* IEEE half and bfloat16 bits of a float (round to nearest even; the
 * values used here are normal). */
static uint16_t to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
  int exp = (int)((x >> 23) & 0xff) - 127 + 15;
  if ((x & 0x7fffffff) == 0)
    return (uint16_t)sign;
  uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return (uint16_t)h;
}

static float from_half(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t x = exp ? sign | ((exp - 15 + 127) << 23) | (mant << 13) : sign;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static int close_to(double got, double want, double rel) {
  return fabs(got - want) <= rel * fmax(1.0, fabs(want));
}

/* ---- one check per feature ------------------------------------------- */

static void check_printf(void) {
  Kernel k;
  if (load("_Z9say_helloi", &k)) {
    int tag = 7;
    void* params[] = {&tag};
    CUresult rc;
    char* text = captured_run(&k, 2, 2, params, &rc);
    int ok = !rc && text && count_lines(text) == 4;
    for (int b = 0; ok && b < 2; ++b)
      for (int t = 0; t < 2; ++t) {
        char line[80];
        snprintf(line, sizeof line, "hello from block %d thread %d, tag 7", b, t);
        ok = ok && count_line(text, line) == 1;
      }
    result(ok, "printf: say_hello", "%s%d lines", rc ? cu_error(rc) : "", text ? count_lines(text) : -1);
    free(text);
    release(&k);
  }
  if (load("_Z12print_valuesPKfi", &k)) {
    float v[] = {-1.5f, 0.0f, 2.25f, 3.0f};
    CUdeviceptr d = upload(v, sizeof v);
    int n = 3;
    void* params[] = {&d, &n};
    CUresult rc;
    char* text = captured_run(&k, 1, 4, params, &rc);
    int ok = !rc && text && count_lines(text) == 3 &&
             count_line(text, "v[0] = -1.500 (negative)") == 1 &&
             count_line(text, "v[1] = 0.000 (non-negative)") == 1 &&
             count_line(text, "v[2] = 2.250 (non-negative)") == 1;
    result(ok, "printf: print_values", "%s%d lines", rc ? cu_error(rc) : "", text ? count_lines(text) : -1);
    free(text);
    cu.mem_free(d);
    release(&k);
  }
}

static void check_assert(void) {
  Kernel k;
  if (!load("_Z14checked_dividePKiS0_Pii", &k))
    return;
  int num[64], den[64], out[64], n = 64, ok = 1;
  for (int i = 0; i < n; ++i) {
    num[i] = 1000 + i * 7;
    den[i] = 1 + i % 9;
  }
  CUdeviceptr dn = upload(num, sizeof num), dd = upload(den, sizeof den), dout = upload(NULL, sizeof out);
  void* params[] = {&dn, &dd, &dout, &n};
  CUresult rc = run(&k, 1, 64, 0, params);
  download(out, dout, sizeof out);
  for (int i = 0; i < n; ++i)
    ok = ok && out[i] == num[i] / den[i];
  result(!rc && ok, "assert: checked_divide (holding)", "%s", rc ? cu_error(rc) : "");
  cu.mem_free(dn), cu.mem_free(dd), cu.mem_free(dout);
  release(&k);
}

static void check_malloc(void) {
  Kernel k;
  if (load("_Z8list_sumPii", &k)) {
    int out[32], n = 10, ok = 1;
    CUdeviceptr d = upload(NULL, sizeof out);
    void* params[] = {&d, &n};
    CUresult rc = run(&k, 1, 32, 0, params);
    download(out, d, sizeof out);
    for (int t = 0; t < 32; ++t)
      ok = ok && out[t] == t * 55;
    result(!rc && ok, "new/delete: list_sum", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(d);
    release(&k);
  }
  if (load("_Z13reversed_copyPKiPii", &k)) {
    int in[16], out[16], n = 16, ok = 1;
    for (int i = 0; i < n; ++i)
      in[i] = i * i;
    CUdeviceptr di = upload(in, sizeof in), dout = upload(NULL, sizeof out);
    void* params[] = {&di, &dout, &n};
    CUresult rc = run(&k, 1, 1, 0, params);
    download(out, dout, sizeof out);
    for (int i = 0; i < n; ++i)
      ok = ok && out[i] == in[n - 1 - i];
    result(!rc && ok, "new[]/delete[]: reversed_copy", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(di), cu.mem_free(dout);
    release(&k);
  }
  if (load("_Z10row_prefixPKfPfi", &k)) {
    float in[4 * 8], out[4 * 8];
    int width = 8, ok = 1;
    for (int i = 0; i < 32; ++i)
      in[i] = (float)(i % 5);
    CUdeviceptr di = upload(in, sizeof in), dout = upload(NULL, sizeof out);
    void* params[] = {&di, &dout, &width};
    CUresult rc = run(&k, 1, 4, 0, params);
    download(out, dout, sizeof out);
    for (int r = 0; r < 4; ++r) {
      float acc = 0;
      for (int i = 0; i < 8; ++i)
        ok = ok && out[r * 8 + i] == (acc += in[r * 8 + i]);
    }
    result(!rc && ok, "malloc/free: row_prefix", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(di), cu.mem_free(dout);
    release(&k);
  }
}

static void check_dynamic_parallelism(void) {
  Kernel k;
  if (load("_Z15launch_childrenPiiS_", &k)) {
    enum { B = 2, PER = 256 };
    int out[B * PER], status[B], per = PER, ok = 1;
    CUdeviceptr dout = upload(NULL, sizeof out), ds = upload(NULL, sizeof status);
    void* params[] = {&dout, &per, &ds};
    CUresult rc = run(&k, B, 32, 0, params);
    download(out, dout, sizeof out);
    download(status, ds, sizeof status);
    for (int b = 0; b < B; ++b) {
      ok = ok && status[b] == 0;
      for (int i = 0; i < PER; ++i)
        ok = ok && out[b * PER + i] == (b * 1000 + i) * 2;
    }
    result(!rc && ok, "dynamic parallelism: launch_children", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(dout), cu.mem_free(ds);
    release(&k);
  }
  if (load("_Z9countdownPii", &k)) {
    int trace[6], depth = 5, ok = 1;
    memset(trace, 0xff, sizeof trace);
    CUdeviceptr d = upload(trace, sizeof trace);
    void* params[] = {&d, &depth};
    CUresult rc = run(&k, 1, 1, 0, params);
    download(trace, d, sizeof trace);
    for (int i = 0; i <= depth; ++i)
      ok = ok && trace[i] == i;
    result(!rc && ok, "dynamic parallelism: countdown", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(d);
    release(&k);
  }
}

static void check_cooperative_groups(void) {
  Kernel k;
  if (load("_Z8tile_sumPKiPii", &k)) {
    int in[256], sum = 0, n = 256;
    for (int i = 0; i < n; ++i)
      in[i] = i + 1;
    CUdeviceptr di = upload(in, sizeof in), ds = upload(NULL, sizeof sum);
    void* params[] = {&di, &ds, &n};
    CUresult rc = run(&k, 2, 128, 0, params);
    download(&sum, ds, sizeof sum);
    result(!rc && sum == 32896, "cooperative groups: tile_sum", "%s sum %d", rc ? cu_error(rc) : "", sum);
    cu.mem_free(di), cu.mem_free(ds);
    release(&k);
  }
  if (load("_Z15grid_neighboursPiS_i", &k)) {
    enum { N = 256 };
    int result_[N], n = N, ok = 1;
    CUdeviceptr dd = upload(NULL, N * sizeof(int)), dr = upload(NULL, sizeof result_);
    void* params[] = {&dd, &dr, &n};
    CUresult rc = cu.launch_cooperative(k.fn, 4, 1, 1, 64, 1, 1, 0, NULL, params);
    if (!rc)
      rc = cu.sync();
    download(result_, dr, sizeof result_);
    for (int i = 0; i < N; ++i)
      ok = ok && result_[i] == 3 * i + 3 * ((i + 1) % N);
    result(!rc && ok, "cooperative groups: grid.sync()", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(dd), cu.mem_free(dr);
    release(&k);
  }
}

static void check_globals(void) {
  Kernel poly, counters;
  if (!load("_Z9eval_polyPKfPfi", &poly))
    return;
  float coeffs[8] = {1.0f, 2.0f, 3.0f};
  int degree = 2, n = 64, ok = 1;
  CUdeviceptr gc = 0, gd = 0;
  size_t size = 0;
  CUresult rc = cu.module_get_global(&gc, &size, poly.module, "poly_coeffs");
  if (!rc)
    rc = cu.module_get_global(&gd, &size, poly.module, "poly_degree");
  if (rc) {
    result(0, "globals: cuModuleGetGlobal", "%s", cu_error(rc));
    release(&poly);
    return;
  }
  cu.htod(gc, coeffs, sizeof coeffs);
  cu.htod(gd, &degree, sizeof degree);
  float x[64], y[64];
  for (int i = 0; i < n; ++i)
    x[i] = (float)i / 8.0f;
  CUdeviceptr dx = upload(x, sizeof x), dy = upload(NULL, sizeof y);
  void* params[] = {&dx, &dy, &n};
  rc = run(&poly, 1, 64, 0, params);
  download(y, dy, sizeof y);
  for (int i = 0; i < n; ++i)
    ok = ok && close_to(y[i], 1.0 + 2.0 * x[i] + 3.0 * x[i] * x[i], 1e-5);
  result(!rc && ok, "globals: __constant__ set by name", "%s", rc ? cu_error(rc) : "");
  /* CUDA semantics: every kernel of a source sees the same __device__
   * variables, so read_counters sees what eval_poly counted. */
  if (load("_Z13read_countersPjPf", &counters)) {
    unsigned count = 0;
    float last = 0;
    CUdeviceptr dc = upload(NULL, sizeof count), dl = upload(NULL, sizeof last);
    void* p2[] = {&dc, &dl};
    rc = run(&counters, 1, 1, 0, p2);
    download(&count, dc, sizeof count);
    download(&last, dl, sizeof last);
    result(!rc && count == 64 && last == y[63], "globals: shared between kernels",
           "%s count %u (want 64), last %g (want %g)", rc ? cu_error(rc) : "", count, (double)last,
           (double)y[63]);
    cu.mem_free(dc), cu.mem_free(dl);
    release(&counters);
  }
  cu.mem_free(dx), cu.mem_free(dy);
  release(&poly);
}

static void check_dynamic_shared(void) {
  Kernel k;
  if (!load("_Z9block_sumPKfPfi", &k))
    return;
  float in[256], out[2];
  int n = 256;
  for (int i = 0; i < n; ++i)
    in[i] = (float)(i % 17);
  CUdeviceptr di = upload(in, sizeof in), dout = upload(NULL, sizeof out);
  void* params[] = {&di, &dout, &n};
  CUresult rc = run(&k, 2, 128, 128 * sizeof(float), params);
  download(out, dout, sizeof out);
  float want[2] = {0, 0};
  for (int i = 0; i < n; ++i)
    want[i / 128] += in[i];
  result(!rc && out[0] == want[0] && out[1] == want[1], "extern __shared__: block_sum",
         "%s", rc ? cu_error(rc) : "");
  cu.mem_free(di), cu.mem_free(dout);
  release(&k);
}

static void check_atomics(void) {
  Kernel k;
  if (!load("_Z9histogramPKhPji", &k))
    return;
  enum { N = 5000 };
  static unsigned char in[N];
  unsigned bins[256] = {0}, want[256] = {0};
  int n = N, ok = 1;
  for (int i = 0; i < N; ++i)
    ++want[in[i] = (unsigned char)((i * 37) ^ (i >> 3))];
  CUdeviceptr di = upload(in, sizeof in), db = upload(NULL, sizeof bins);
  void* params[] = {&di, &db, &n};
  CUresult rc = run(&k, 4, 128, 0, params);
  download(bins, db, sizeof bins);
  for (int b = 0; b < 256; ++b)
    ok = ok && bins[b] == want[b];
  result(!rc && ok, "atomics: histogram", "%s", rc ? cu_error(rc) : "");
  cu.mem_free(di), cu.mem_free(db);
  release(&k);
}

static void check_warp(void) {
  Kernel k;
  if (!load("_Z11warp_reducePKiPi", &k))
    return;
  int in[64], out[2], ok;
  for (int i = 0; i < 64; ++i)
    in[i] = i * 3 - 20;
  CUdeviceptr di = upload(in, sizeof in), dout = upload(NULL, sizeof out);
  void* params[] = {&di, &dout};
  CUresult rc = run(&k, 1, 64, 0, params);
  download(out, dout, sizeof out);
  int want0 = 0, want1 = 0;
  for (int i = 0; i < 32; ++i)
    want0 += in[i], want1 += in[32 + i];
  ok = out[0] == want0 && out[1] == want1;
  result(!rc && ok, "warp shuffles: warp_reduce", "%s", rc ? cu_error(rc) : "");
  cu.mem_free(di), cu.mem_free(dout);
  release(&k);
}

static void check_half(void) {
  Kernel k;
  if (!load("_Z5haxpyi6__halfPKS_PS_", &k))
    return;
  enum { N = 64 };
  uint16_t x[N], y[N], out[N];
  for (int i = 0; i < N; ++i) {
    x[i] = to_half((float)(i % 8));
    y[i] = to_half((float)(i % 5) - 2.0f);
  }
  uint16_t a = to_half(0.5f);
  int n = N, ok = 1;
  CUdeviceptr dx = upload(x, sizeof x), dy = upload(y, sizeof y);
  void* params[] = {&n, &a, &dx, &dy};
  CUresult rc = run(&k, 1, N, 0, params);
  download(out, dy, sizeof out);
  for (int i = 0; i < N; ++i)
    ok = ok && from_half(out[i]) == 0.5f * from_half(x[i]) + from_half(y[i]);
  result(!rc && ok, "half: haxpy", "%s", rc ? cu_error(rc) : "");
  cu.mem_free(dx), cu.mem_free(dy);
  release(&k);
}

static void check_math(void) {
  Kernel k;
  if (!load("_Z10float_mathPKfPfi", &k))
    return;
  enum { N = 32 };
  float x[N], out[8 * N];
  int n = N, ok = 1, worst = -1;
  for (int i = 0; i < N; ++i)
    x[i] = -3.0f + 0.2f * (float)i;
  CUdeviceptr dx = upload(x, sizeof x), dout = upload(NULL, sizeof out);
  void* params[] = {&dx, &dout, &n};
  CUresult rc = run(&k, 1, N, 0, params);
  download(out, dout, sizeof out);
  for (int i = 0; i < N; ++i) {
    double v = x[i];
    double want[6] = {sin(v) + cos(v), exp(v) - log(fabs(v) + 1), erf(v) + erfc(v),
                      lgamma(fabs(v) + 0.5), tgamma(fabs(v) + 0.5), pow(fabs(v), 1.5) + cbrt(v)};
    for (int j = 0; j < 6; ++j)
      if (!close_to(out[8 * i + j], want[j], 1e-5)) {
        ok = 0;
        worst = 8 * i + j;
      }
  }
  result(!rc && ok, "device math: float_math vs libm", "%s first mismatch at %d", rc ? cu_error(rc) : "", worst);
  cu.mem_free(dx), cu.mem_free(dout);
  release(&k);
}

static void check_inline_ptx(void) {
  Kernel k;
  if (!load("_Z8ptx_bitsPKjPjPiS1_i", &k))
    return;
  enum { N = 64 };
  unsigned in[N], swapped[N], lanes[N];
  int top[N], n = N, ok = 1;
  for (int i = 0; i < N; ++i)
    in[i] = 0x01020304u * (unsigned)(i + 1) ^ (1u << (i % 32));
  CUdeviceptr di = upload(in, sizeof in), ds = upload(NULL, sizeof swapped),
              dt = upload(NULL, sizeof top), dl = upload(NULL, sizeof lanes);
  void* params[] = {&di, &ds, &dt, &dl, &n};
  CUresult rc = run(&k, 1, N, 0, params);
  download(swapped, ds, sizeof swapped);
  download(top, dt, sizeof top);
  download(lanes, dl, sizeof lanes);
  for (int i = 0; i < N; ++i) {
    unsigned v = in[i];
    unsigned want = (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
    ok = ok && swapped[i] == want && top[i] == (v ? 31 - __builtin_clz(v) : -1) &&
         lanes[i] == (unsigned)(i % 32);
  }
  result(!rc && ok, "inline PTX: prmt/bfind/laneid", "%s", rc ? cu_error(rc) : "");
  cu.mem_free(di), cu.mem_free(ds), cu.mem_free(dt), cu.mem_free(dl);
  release(&k);
}

/* D = A x B with A MxK, B KxN row-major, small integers (exact in half). */
static void check_matmul(const char* what, const char* name, const char* spec, int m, int nn,
                         int threads) {
  Kernel k;
  if (!load_for(name, spec, &k))
    return;
  enum { K = 16 };
  uint16_t a[64 * K], b[K * 8];
  float d[64 * 8];
  int ok = 1;
  for (int i = 0; i < m * K; ++i)
    a[i] = to_half((float)((i * 7) % 5 - 2));
  for (int i = 0; i < K * nn; ++i)
    b[i] = to_half((float)((i * 3) % 4 - 1));
  CUdeviceptr da = upload(a, sizeof a), db = upload(b, sizeof b), dd = upload(NULL, sizeof d);
  void* params[] = {&da, &db, &dd};
  CUresult rc = run(&k, 1, (unsigned)threads, 0, params);
  download(d, dd, sizeof d);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < nn; ++c) {
      float want = 0;
      for (int x = 0; x < K; ++x)
        want += from_half(a[r * K + x]) * from_half(b[x * nn + c]);
      ok = ok && d[r * nn + c] == want;
    }
  result(!rc && ok, what, "%s", rc ? cu_error(rc) : "");
  cu.mem_free(da), cu.mem_free(db), cu.mem_free(dd);
  release(&k);
}

static void check_templates(void) {
  Kernel k;
  if (load("_Z13axpy_unrolledIfLi4EEvT_PKS0_PS0_i", &k)) {
    enum { N = 1000 };
    static float x[N], y[N], out[N];
    float a = 1.5f;
    int n = N, ok = 1;
    for (int i = 0; i < N; ++i)
      x[i] = (float)(i % 13), y[i] = (float)(i % 7);
    CUdeviceptr dx = upload(x, sizeof x), dy = upload(y, sizeof y);
    void* params[] = {&a, &dx, &dy, &n};
    CUresult rc = run(&k, (N / 4 + 127) / 128, 128, 0, params);
    download(out, dy, sizeof out);
    for (int i = 0; i < N; ++i)
      ok = ok && out[i] == a * x[i] + y[i];
    result(!rc && ok, "templates: axpy_unrolled<float, 4>", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(dx), cu.mem_free(dy);
    release(&k);
  }
  if (load("_Z8zip_withI3MaxiEvT_PKT0_S4_PS2_i", &k)) {
    enum { N = 100 };
    int a[N], b[N], out[N], n = N, ok = 1;
    char op = 0; /* the empty functor, passed by value */
    for (int i = 0; i < N; ++i)
      a[i] = i * 3 % 17, b[i] = i * 5 % 19;
    CUdeviceptr da = upload(a, sizeof a), db = upload(b, sizeof b), dout = upload(NULL, sizeof out);
    void* params[] = {&op, &da, &db, &dout, &n};
    CUresult rc = run(&k, 1, 128, 0, params);
    download(out, dout, sizeof out);
    for (int i = 0; i < N; ++i)
      ok = ok && out[i] == (a[i] < b[i] ? b[i] : a[i]);
    result(!rc && ok, "templates: zip_with<Max, int>", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(da), cu.mem_free(db), cu.mem_free(dout);
    release(&k);
  }
}

static void check_big_params(void) {
  Kernel k;
  if (!load("_Z12apply_filter6FilterPKfPfi", &k))
    return;
  static struct {
    float taps[1536];
    int ntaps;
    float gain;
  } f;
  enum { N = 256 };
  float in[N], out[N];
  int n = N, ok = 1;
  for (int t = 0; t < 1536; ++t)
    f.taps[t] = t < 16 ? (float)(t + 1) : 1000.0f;
  f.ntaps = 16;
  f.gain = 0.5f;
  for (int i = 0; i < N; ++i)
    in[i] = (float)(i % 3);
  CUdeviceptr di = upload(in, sizeof in), dout = upload(NULL, sizeof out);
  void* params[] = {&f, &di, &dout, &n};
  CUresult rc = run(&k, 2, 128, 0, params);
  download(out, dout, sizeof out);
  for (int i = 0; i < N; ++i) {
    float acc = 0;
    for (int t = 0; t < f.ntaps && t <= i; ++t)
      acc += f.taps[t] * in[i - t];
    ok = ok && out[i] == f.gain * acc;
  }
  result(!rc && ok, "parameters over 4 KiB: apply_filter", "%s", rc ? cu_error(rc) : "");
  cu.mem_free(di), cu.mem_free(dout);
  release(&k);
}

static unsigned collatz_steps(unsigned long long x) {
  unsigned s = 0;
  for (; x > 1; ++s)
    x = x % 2 ? 3 * x + 1 : x / 2;
  return s;
}

static void check_deferred(void) {
  Kernel k;
  if (load("_Z8activatePKfPfii", &k)) {
    enum { N = 64 };
    float in[N], out[N];
    int n = N, ok = 1;
    for (int i = 0; i < N; ++i)
      in[i] = (float)(i - 32) / 8.0f;
    CUdeviceptr di = upload(in, sizeof in), dout = upload(NULL, sizeof out);
    for (int which = 0; which < 3; ++which) {
      void* params[] = {&di, &dout, &n, &which};
      CUresult rc = run(&k, 1, N, 0, params);
      download(out, dout, sizeof out);
      for (int i = 0; i < N; ++i) {
        double v = in[i], relu = v > 0 ? v : 0;
        double want = which == 0 ? relu : which == 1 ? (v > 0 ? v : 0.01 * v) : log1p(exp(relu));
        ok = ok && !rc && close_to(out[i], want, 1e-5);
      }
    }
    result(ok, "kiln_deferred: activate (3 choices)", NULL);
    cu.mem_free(di), cu.mem_free(dout);
    release(&k);
  }
  if (load("_Z7collatzPKyPji", &k)) {
    enum { N = 32 };
    unsigned long long in[N];
    unsigned steps[N];
    int n = N, ok = 1;
    for (int i = 0; i < N; ++i)
      in[i] = (unsigned long long)(i * 37 + 1);
    CUdeviceptr di = upload(in, sizeof in), ds = upload(NULL, sizeof steps);
    void* params[] = {&di, &ds, &n};
    CUresult rc = run(&k, 1, N, 0, params);
    download(steps, ds, sizeof steps);
    for (int i = 0; i < N; ++i)
      ok = ok && steps[i] == collatz_steps(in[i]);
    result(!rc && ok, "kiln_deferred: collatz (self-recursive)", "%s", rc ? cu_error(rc) : "");
    cu.mem_free(di), cu.mem_free(ds);
    release(&k);
  }
}

#define SYM(field, name)                                                                          \
  do {                                                                                            \
    *(void**)&cu.field = dlsym(lib, name);                                                        \
    if (!cu.field) {                                                                              \
      fprintf(stderr, "kernels_gpu: libcuda.so.1 lacks %s\n", name);                             \
      return 77;                                                                                  \
    }                                                                                             \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: kernels_gpu CACHE [TARGET]\n");
    return 2;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    printf("kernels_gpu: skipped: no CUDA driver (%s)\n", dlerror());
    return 77;
  }
  SYM(init, "cuInit");
  SYM(device_get, "cuDeviceGet");
  SYM(attribute, "cuDeviceGetAttribute");
  SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  SYM(ctx_set_current, "cuCtxSetCurrent");
  SYM(mem_alloc, "cuMemAlloc_v2");
  SYM(mem_free, "cuMemFree_v2");
  SYM(htod, "cuMemcpyHtoD_v2");
  SYM(dtoh, "cuMemcpyDtoH_v2");
  SYM(memset_d8, "cuMemsetD8_v2");
  SYM(launch, "cuLaunchKernel");
  SYM(launch_cooperative, "cuLaunchCooperativeKernel");
  SYM(sync, "cuCtxSynchronize");
  SYM(module_get_global, "cuModuleGetGlobal_v2");
  SYM(error_name, "cuGetErrorName");
  int dev, major = 0, minor = 0;
  void* ctx;
  if (cu.init(0) || cu.device_get(&dev, 0) ||
      cu.attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ||
      cu.attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) ||
      cu.primary_ctx_retain(&ctx, dev) || cu.ctx_set_current(ctx)) {
    printf("kernels_gpu: skipped: no usable CUDA device\n");
    return 77;
  }
  snprintf(target, sizeof target, "%s", argc > 2 ? argv[2] : "");
  if (!target[0])
    snprintf(target, sizeof target, "sm_%d%d", major, minor);
  snprintf(target_a, sizeof target_a, "%sa", target);
  if (kiln_cache_open(argv[1], &cache) != KILN_OK) {
    printf("kernels_gpu: cannot open %s: %s\n", argv[1], kiln_last_error());
    return 1;
  }
  printf("kernels_gpu: compute %d.%d, kernels for %s\n", major, minor, target);
  check_printf();
  check_assert();
  check_malloc();
  check_dynamic_parallelism();
  check_cooperative_groups();
  check_globals();
  check_dynamic_shared();
  check_atomics();
  check_warp();
  check_half();
  check_math();
  check_inline_ptx();
  check_matmul("tensor cores: mma.sync m16n8k16", "_Z11mma_16x8x16PK6__halfS1_Pf", target, 16, 8, 32);
  if (major == 9 && minor == 0)
    check_matmul("tensor cores: wgmma m64n8k16", "_Z13wgmma_64x8x16PK6__halfS1_Pf", target_a, 64,
                 8, 128);
  check_templates();
  check_big_params();
  check_deferred();
  kiln_cache_close(cache);
  printf("kernels_gpu: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
