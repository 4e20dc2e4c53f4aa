// Matrix cores through MFMA (CDNA 3, gfx942): one 64-wide wavefront
// multiplies a 16x16 half tile by a 16x16 half tile into a 16x16 float tile
// with v_mfma_f32_16x16x16_f16.
#include <hip/hip_runtime.h>

typedef _Float16 half4 __attribute__((ext_vector_type(4)));
typedef float float4_ __attribute__((ext_vector_type(4)));

// a: 16x16 row-major, b: 16x16 row-major (k, n), d: 16x16 row-major.
__global__ void mfma_16x16x16(const _Float16* a, const _Float16* b, float* d) {
  unsigned lane = threadIdx.x % 64;
  unsigned row = lane % 16, kgroup = lane / 16;
  half4 fa, fb;
  for (int j = 0; j < 4; ++j) {
    fa[j] = a[row * 16 + kgroup * 4 + j];
    fb[j] = b[(kgroup * 4 + j) * 16 + row];
  }
  float4_ acc = {0.0f, 0.0f, 0.0f, 0.0f};
  acc = __builtin_amdgcn_mfma_f32_16x16x16f16(fa, fb, acc, 0, 0, 0);
  for (int j = 0; j < 4; ++j)
    d[(kgroup * 4 + j) * 16 + row] = acc[j];
}
