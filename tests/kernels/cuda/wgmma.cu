// Tensor cores through warpgroup MMA (wgmma), which exists only on sm_90a:
// one warpgroup (128 threads) computes D[64x8] = A[64x16] * B[16x8] with A
// and B in shared memory, described by matrix descriptors (no swizzle, 8x8
// core matrices stored contiguously).
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ uint64_t smem_descriptor(const void* p, uint32_t leading_bytes,
                                                    uint32_t stride_bytes) {
  uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  uint64_t d = 0;
  d |= uint64_t((addr & 0x3ffff) >> 4);
  d |= uint64_t((leading_bytes & 0x3ffff) >> 4) << 16;
  d |= uint64_t((stride_bytes & 0x3ffff) >> 4) << 32;
  return d; // base offset 0, swizzle mode 0 (none)
}

// a: 64x16 row-major, b: 16x8 row-major (k, n), d: 64x8 row-major.
__global__ void __launch_bounds__(128) wgmma_64x8x16(const __half* a, const __half* b, float* d) {
  // Core matrix (r, c) of A holds rows 8r..8r+7, columns 8c..8c+7; B is
  // stored transposed (n rows of k), so both operands are K-major.
  __shared__ alignas(128) __half sa[64 * 16];
  __shared__ alignas(128) __half sb[8 * 16];
  for (int i = threadIdx.x; i < 64 * 16; i += 128) {
    int m = i / 16, k = i % 16;
    sa[((m / 8) * 2 + k / 8) * 64 + (m % 8) * 8 + k % 8] = a[i];
  }
  for (int i = threadIdx.x; i < 16 * 8; i += 128) {
    int k = i / 8, n = i % 8;
    sb[(k / 8) * 64 + n * 8 + k % 8] = b[i];
  }
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  uint64_t da = smem_descriptor(sa, 128, 256);
  uint64_t db = smem_descriptor(sb, 128, 256);
  float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %6, 0;\n\t"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
               "{%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}"
               : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
               : "l"(da), "l"(db), "r"(0));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned row = warp * 16 + lane / 4, col = (lane % 4) * 2;
  d[row * 8 + col] = c0;
  d[row * 8 + col + 1] = c1;
  d[(row + 8) * 8 + col] = c2;
  d[(row + 8) * 8 + col + 1] = c3;
}
