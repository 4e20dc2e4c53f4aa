// Warp-level primitives: shuffles (down, xor, indexed, up), votes, ballots,
// match and the sm_80 warp reductions.

__device__ int warp_sum(int v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void warp_reduce(const int* in, int* out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  int s = warp_sum(v);
  if ((threadIdx.x & 31) == 0)
    out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = s;
}

__global__ void butterfly_max(const float* in, float* out) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int mask = 16; mask > 0; mask /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask));
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// Inclusive scan with __shfl_up_sync, then a broadcast of the warp total.
__global__ void warp_scan(const int* in, int* out, int* totals) {
  unsigned lane = threadIdx.x & 31;
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int d = 1; d < 32; d *= 2) {
    int up = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= unsigned(d))
      v += up;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
  int total = __shfl_sync(0xffffffffu, v, 31);
  if (lane == 0)
    totals[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = total;
}

__global__ void votes(const int* in, unsigned* ballots, int* flags) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  unsigned mask = __activemask();
  unsigned positive = __ballot_sync(mask, v > 0);
  int all = __all_sync(mask, v != 0);
  int any = __any_sync(mask, v < 0);
  unsigned same = __match_any_sync(mask, v);
  if ((threadIdx.x & 31) == 0) {
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    ballots[2 * w] = positive;
    ballots[2 * w + 1] = same;
    flags[w] = all | (any << 1) | (__popc(positive) << 2);
  }
}

__global__ void warp_reduce_sm80(const unsigned* in, unsigned* out) {
  unsigned v = in[blockIdx.x * blockDim.x + threadIdx.x];
  unsigned sum = __reduce_add_sync(0xffffffffu, v);
  unsigned mx = __reduce_max_sync(0xffffffffu, v);
  if ((threadIdx.x & 31) == 0) {
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    out[2 * w] = sum;
    out[2 * w + 1] = mx;
  }
}
