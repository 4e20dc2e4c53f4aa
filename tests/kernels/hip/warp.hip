// Wavefront-level primitives on 64-wide wavefronts: shuffles (down, xor,
// indexed, up), votes and 64-bit ballots.
#include <hip/hip_runtime.h>

__device__ int wave_sum(int v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_down(v, offset);
  return v;
}

__global__ void wave_reduce(const int* in, int* out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  int s = wave_sum(v);
  if ((threadIdx.x % warpSize) == 0)
    out[(blockIdx.x * blockDim.x + threadIdx.x) / warpSize] = s;
}

__global__ void butterfly_max(const float* in, float* out) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int mask = warpSize / 2; mask > 0; mask /= 2)
    v = fmaxf(v, __shfl_xor(v, mask));
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// Inclusive scan with __shfl_up, then a broadcast of the wavefront total.
__global__ void wave_scan(const int* in, int* out, int* totals) {
  unsigned lane = threadIdx.x % warpSize;
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int d = 1; d < warpSize; d *= 2) {
    int up = __shfl_up(v, d);
    if (lane >= unsigned(d))
      v += up;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
  int total = __shfl(v, warpSize - 1);
  if (lane == 0)
    totals[(blockIdx.x * blockDim.x + threadIdx.x) / warpSize] = total;
}

__global__ void votes(const int* in, unsigned long long* ballots, int* flags) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  unsigned long long positive = __ballot(v > 0);
  int all = __all(v != 0);
  int any = __any(v < 0);
  if ((threadIdx.x % warpSize) == 0) {
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    ballots[w] = positive;
    flags[w] = all | (any << 1) | (__popcll(positive) << 2);
  }
}
