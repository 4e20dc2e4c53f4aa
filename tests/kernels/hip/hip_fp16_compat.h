// HIP before 5.6 (Debian's 5.2 headers) has hip_fp16.h call
// __llvm_amdgcn_rcp_f16 and __llvm_amdgcn_rcp_2f16, which clang's HIP
// wrapper used to declare and clang 22 no longer does. Include this before
// <hip/hip_fp16.h>; it renames those calls to local definitions, so it is
// harmless with a clang that still declares them.
#pragma once
#include <hip/hip_version.h>

#if HIP_VERSION < 50600000
typedef _Float16 kiln_compat_2f16 __attribute__((ext_vector_type(2)));
__device__ inline _Float16 kiln_compat_rcp_f16(_Float16 x) { return _Float16(1.0f) / x; }
__device__ inline kiln_compat_2f16 kiln_compat_rcp_2f16(kiln_compat_2f16 x) {
  return kiln_compat_2f16(_Float16(1.0f)) / x;
}
#define __llvm_amdgcn_rcp_f16 kiln_compat_rcp_f16
#define __llvm_amdgcn_rcp_2f16 kiln_compat_rcp_2f16
#endif
