// Device math from the CUDA math headers. The IR calls libdevice (__nv_sinf,
// __nv_erf, __nv_lgammaf, ...), which is linked when the code is compiled
// for a GPU, not when the IR is made (-nocudalib).
#include <cmath>

__global__ void float_math(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = x[i];
  out[8 * i + 0] = sinf(v) + cosf(v);
  out[8 * i + 1] = expf(v) - logf(fabsf(v) + 1.0f);
  out[8 * i + 2] = erff(v) + erfcf(v);
  out[8 * i + 3] = lgammaf(fabsf(v) + 0.5f);
  out[8 * i + 4] = tgammaf(fabsf(v) + 0.5f);
  out[8 * i + 5] = powf(fabsf(v), 1.5f) + cbrtf(v);
  out[8 * i + 6] = atan2f(v, 1.0f) + tanhf(v);
  float s, c;
  sincospif(v, &s, &c);
  out[8 * i + 7] = s * c + rsqrtf(fabsf(v) + 1.0f);
}

__global__ void double_math(const double* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  double v = x[i];
  out[4 * i + 0] = erf(v) + erfinv(0.5 * tanh(v));
  out[4 * i + 1] = lgamma(fabs(v) + 0.5);
  out[4 * i + 2] = exp(v) * log1p(fabs(v));
  out[4 * i + 3] = j0(v) + y1(fabs(v) + 1.0) + hypot(v, 2.0);
}

// The fast intrinsics (special function unit approximations).
__global__ void fast_intrinsics(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = __expf(x[i]) + __sinf(x[i]) * __cosf(x[i]) + __fdividef(x[i], 3.0f) + __logf(2.0f + x[i] * x[i]);
}
