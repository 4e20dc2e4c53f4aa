// Cooperative groups: static tiles with shuffle reductions, coalesced
// groups, and a grid-wide sync (a cooperative launch; the sync is the ROCm
// device library's __ockl_grid_sync).
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>

namespace cg = cooperative_groups;

__global__ void tile_sum(const int* in, int* out, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int i = blockIdx.x * blockDim.x + block.thread_rank();
  int v = i < n ? in[i] : 0;
  for (int offset = 16; offset > 0; offset /= 2)
    v += tile.shfl_down(v, offset);
  if (tile.thread_rank() == 0)
    atomicAdd(out, v);
}

__global__ void tile_max(const float* in, float* out, int n) {
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<8>(block);
  int i = blockIdx.x * blockDim.x + block.thread_rank();
  float v = i < n ? in[i] : -1e30f;
  for (int mask = 4; mask > 0; mask /= 2)
    v = fmaxf(v, tile.shfl_xor(v, mask));
  if (tile.thread_rank() == 0)
    out[i / 8] = v;
  tile.sync();
}

// Threads with odd values count themselves within their coalesced group.
__global__ void count_odd(const int* in, int* counts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && (in[i] & 1)) {
    cg::coalesced_group active = cg::coalesced_threads();
    if (active.thread_rank() == 0)
      atomicAdd(counts, int(active.size()));
  }
}

// Two phases separated by a grid-wide barrier: each element then reads its
// right neighbour's phase-one value, whichever block wrote it.
__global__ void grid_neighbours(int* data, int* result, int n) {
  cg::grid_group grid = cg::this_grid();
  unsigned long long i = grid.thread_rank();
  if (i < unsigned(n))
    data[i] = int(i) * 3;
  grid.sync();
  if (i < unsigned(n))
    result[i] = data[i] + data[(i + 1) % n];
}
