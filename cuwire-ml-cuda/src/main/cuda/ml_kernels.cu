// The kernels of cuwire-ml's CUDA compute backend, compiled by nvcc at build time into
// io/cuwire/ml/cuda/ml_kernels.fatbin (its own module, loaded by io.cuwire.cuda.KernelModule) and launched from
// io.cuwire.ml.cuda.internal.MlKernels.

#include <math_constants.h>
#include <stdint.h>

#define GRID_STRIDE_LOOP(i, n) \
    for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t) blockDim.x * gridDim.x)

#include "ml_kernels.cuh"
