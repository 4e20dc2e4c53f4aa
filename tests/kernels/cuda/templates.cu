// A template library instantiated many times: 224 kernels in one unit, as a
// CUB- or Thrust-style header gives when it is used with many types and
// tuning parameters. The instantiations are spelled by macros.

template <typename T, int Unroll>
__global__ void axpy_unrolled(T a, const T* x, T* y, int n) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * Unroll;
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    if (base + u < n)
      y[base + u] = a * x[base + u] + y[base + u];
}

template <typename T, int Radius>
__global__ void stencil_1d(const T* in, T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < Radius || i >= n - Radius)
    return;
  T acc = T(0);
#pragma unroll
  for (int r = -Radius; r <= Radius; ++r)
    acc += in[i + r] * T(Radius + 1 - (r < 0 ? -r : r));
  out[i] = acc;
}

struct Add { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct Sub { template <typename T> __device__ T operator()(T a, T b) const { return a - b; } };
struct Mul { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
struct Min { template <typename T> __device__ T operator()(T a, T b) const { return a < b ? a : b; } };
struct Max { template <typename T> __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
struct First { template <typename T> __device__ T operator()(T a, T) const { return a; } };
struct Second { template <typename T> __device__ T operator()(T, T b) const { return b; } };
struct Avg { template <typename T> __device__ T operator()(T a, T b) const { return (a + b) / T(2); } };

template <typename Op, typename T>
__global__ void zip_with(Op op, const T* a, const T* b, T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = op(a[i], b[i]);
}

#define KILN_AXPY(T, U) template __global__ void axpy_unrolled<T, U>(T, const T*, T*, int);
#define KILN_STENCIL(T, R) template __global__ void stencil_1d<T, R>(const T*, T*, int);
#define KILN_ZIP(Op, T) template __global__ void zip_with<Op, T>(Op, const T*, const T*, T*, int);

#define KILN_1_TO_16(M, T)                                                                         \
  M(T, 1) M(T, 2) M(T, 3) M(T, 4) M(T, 5) M(T, 6) M(T, 7) M(T, 8) M(T, 9) M(T, 10) M(T, 11)       \
  M(T, 12) M(T, 13) M(T, 14) M(T, 15) M(T, 16)
#define KILN_1_TO_20(M, T) KILN_1_TO_16(M, T) M(T, 17) M(T, 18) M(T, 19) M(T, 20)
#define KILN_OPS(M, T) M(Add, T) M(Sub, T) M(Mul, T) M(Min, T) M(Max, T) M(First, T) M(Second, T) M(Avg, T)

// 8 types x 16 unroll factors = 128 kernels.
KILN_1_TO_16(KILN_AXPY, float)
KILN_1_TO_16(KILN_AXPY, double)
KILN_1_TO_16(KILN_AXPY, int)
KILN_1_TO_16(KILN_AXPY, unsigned)
KILN_1_TO_16(KILN_AXPY, long long)
KILN_1_TO_16(KILN_AXPY, unsigned long long)
KILN_1_TO_16(KILN_AXPY, short)
KILN_1_TO_16(KILN_AXPY, unsigned short)
// 4 types x 20 radii = 80 kernels.
KILN_1_TO_20(KILN_STENCIL, float)
KILN_1_TO_20(KILN_STENCIL, double)
KILN_1_TO_20(KILN_STENCIL, int)
KILN_1_TO_20(KILN_STENCIL, long long)
// 8 operators x 2 types = 16 kernels.
KILN_OPS(KILN_ZIP, float)
KILN_OPS(KILN_ZIP, int)
