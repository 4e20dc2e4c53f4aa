// Device-side graph control (CUDA 12.3+), as in the CUDA samples'
// graphConditionalNodes: kernels in a graph's conditional nodes set the
// condition that decides whether the node's body runs (if) or runs again
// (while). cudaGraphSetConditional is neither in libdevice nor in
// libcudadevrt: the driver supplies it when it loads the module, so the
// image keeps it undefined, as nvlink leaves it.
#include <cstdio>

// if node: the body runs when *flag is odd.
__global__ void if_condition(const char *flag, cudaGraphConditionalHandle handle) {
  unsigned int value = *flag & 1;
  cudaGraphSetConditional(handle, value);
  printf("GPU: condition set to %u\n", value);
}

// do-while node: the body counts *counter down and ends the loop at zero.
__global__ void while_body(char *counter, cudaGraphConditionalHandle handle) {
  if (--*counter == 0)
    cudaGraphSetConditional(handle, 0);
}

// switch-like use: one of several handles is cleared by index.
__global__ void clear_branch(const int *which, cudaGraphConditionalHandle first,
                             cudaGraphConditionalHandle second) {
  cudaGraphSetConditional(*which == 0 ? first : second, 0);
}
