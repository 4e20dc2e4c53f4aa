// Dynamic parallelism: kernels that launch kernels. Needs relocatable device
// code (-fgpu-rdc) and the device runtime (libcudadevrt), whose launch calls
// the driver resolves.

__global__ void fill_child(int* out, int base, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = base + i;
}

__global__ void scale_child(int* out, int factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] *= factor;
}

// One child grid per block fills that block's slice; a tail launch scales
// it once the child grids are done.
__global__ void launch_children(int* out, int per_block, int* status) {
  if (threadIdx.x != 0)
    return;
  int* slice = out + blockIdx.x * per_block;
  fill_child<<<(per_block + 127) / 128, 128>>>(slice, int(blockIdx.x) * 1000, per_block);
  scale_child<<<(per_block + 127) / 128, 128, 0, cudaStreamTailLaunch>>>(slice, 2, per_block);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    status[blockIdx.x] = int(e);
}

// Recursion through launches: each level launches the next until depth 0.
__global__ void countdown(int* trace, int depth) {
  trace[depth] = depth;
  if (depth > 0)
    countdown<<<1, 1, 0, cudaStreamFireAndForget>>>(trace, depth - 1);
}
