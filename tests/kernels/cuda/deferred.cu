// Deferred device functions from CUDA source: kiln::deferred(f) (from
// <kiln/device.h>) gives f's address with f compiled as its own Kiln job,
// so a kernel's image links in the jobs it refers to.
#include <kiln/device.h>

__device__ float relu(float x) { return x > 0.0f ? x : 0.0f; }
__device__ float leaky(float x) { return x > 0.0f ? x : 0.01f * x; }
__device__ float softplus(float x) { return log1pf(expf(x)); }

// A deferred function that defers in turn.
__device__ float relu_then_softplus(float x) {
  auto inner = kiln::deferred(relu);
  auto outer = kiln::deferred(softplus);
  return outer(inner(x));
}

__global__ void activate(const float* in, float* out, int n, int which) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float (*f)(float) = which == 0   ? kiln::deferred(relu)
                      : which == 1 ? kiln::deferred(leaky)
                                   : kiln::deferred(relu_then_softplus);
  out[i] = f(in[i]);
}

// Self-recursion through a deferred reference.
__device__ unsigned collatz_steps(unsigned long long x) {
  if (x <= 1)
    return 0;
  auto self = kiln::deferred(collatz_steps);
  return 1 + self(x % 2 ? 3 * x + 1 : x / 2);
}

__global__ void collatz(const unsigned long long* in, unsigned* steps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    steps[i] = kiln::deferred(collatz_steps)(in[i]);
}
