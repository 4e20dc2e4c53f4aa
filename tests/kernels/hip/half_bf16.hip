// Half precision and bfloat16 through hip_fp16.h and hip_bfloat16.h: scalar
// and paired half arithmetic, conversions, and bfloat16 rounding.
#include <hip/hip_runtime.h>
#include "hip_fp16_compat.h" // before hip_fp16.h; see there
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>

__global__ void haxpy(int n, __half a, const __half* x, __half* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = __hfma(a, x[i], y[i]);
}

// Two halves per thread with __half2.
__global__ void haxpy2(int n2, float a, const __half2* x, __half2* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __half2 a2 = __float2half2_rn(a);
  if (i < n2)
    y[i] = __hfma2(a2, x[i], y[i]);
}

__global__ void bf16_dot(const hip_bfloat16* x, const hip_bfloat16* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicAdd(out, float(x[i] * y[i]));
}

__global__ void bf16_axpy(float a, const hip_bfloat16* x, hip_bfloat16* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = hip_bfloat16(a * float(x[i]) + float(y[i]));
}

// Round trips: float -> half -> float and float -> bf16 -> float errors.
__global__ void round_trip(const float* in, float* half_err, float* bf16_err, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    half_err[i] = fabsf(__half2float(__float2half(in[i])) - in[i]);
    bf16_err[i] = fabsf(float(hip_bfloat16(in[i])) - in[i]);
  }
}
