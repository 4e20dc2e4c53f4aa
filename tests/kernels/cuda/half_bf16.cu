// Half precision and bfloat16 through cuda_fp16.h and cuda_bf16.h: scalar
// and paired arithmetic, conversions, and fused multiply-adds.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

__global__ void bf16_dot(const __nv_bfloat16* x, const __nv_bfloat16* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicAdd(out, __bfloat162float(__hmul(x[i], y[i])));
}

__global__ void bf16_pairs(const __nv_bfloat162* x, __nv_bfloat162* y, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2)
    y[i] = __hfma2(x[i], y[i], __float2bfloat162_rn(1.0f));
}

// Round trips: float -> half -> float and float -> bf16 -> float errors.
__global__ void round_trip(const float* in, float* half_err, float* bf16_err, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    half_err[i] = fabsf(__half2float(__float2half(in[i])) - in[i]);
    bf16_err[i] = fabsf(__bfloat162float(__float2bfloat16(in[i])) - in[i]);
  }
}
