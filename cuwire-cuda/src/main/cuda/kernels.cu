// The platform's kernels, compiled by nvcc at build time into io/cuwire/cuda/kernels.fatbin and launched from
// io.cuwire.cuda.Kernels (io.cuwire.cuda.Kernel, cuLaunchKernel). Every entry point is extern "C" (unmangled names)
// and takes its element count as a 64-bit integer; grid-stride loops let any grid size cover any n.

#include <stdint.h>

#define GRID_STRIDE_LOOP(i, n) \
    for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t) blockDim.x * gridDim.x)

extern "C" {

// y[i] = a * x[i] + y[i]
__global__ void axpy_f32(int64_t n, float a, const float* __restrict__ x, float* __restrict__ y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = fmaf(a, x[i], y[i]);
    }
}

__global__ void axpy_f64(int64_t n, double a, const double* __restrict__ x, double* __restrict__ y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = fma(a, x[i], y[i]);
    }
}

// y[i] = value
__global__ void fill_f32(int64_t n, float value, float* __restrict__ y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = value;
    }
}

__global__ void fill_f64(int64_t n, double value, double* __restrict__ y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = value;
    }
}

// y[i] = a * y[i]
__global__ void scale_f32(int64_t n, float a, float* __restrict__ y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = a * y[i];
    }
}

__global__ void scale_f64(int64_t n, double a, double* __restrict__ y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = a * y[i];
    }
}

}  // extern "C"
