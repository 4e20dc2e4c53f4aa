// The loader's device backends, all together: the dispatch interface
// (backend.h) and each backend's own entry points, for code that names a
// device directly (the CUDA JIT path, the compiler's present_target).
#pragma once

#include "runtime/backend.h"
#include "runtime/cuda/cuda_jit.h"
#include "runtime/cuda/cuda_loader.h"
#include "runtime/cuda/cuda_select.h"
#include "runtime/hip/hip_loader.h"
#include "runtime/hip/hip_select.h"
#include "runtime/host/host_loader.h"
#include "runtime/host/host_select.h"
