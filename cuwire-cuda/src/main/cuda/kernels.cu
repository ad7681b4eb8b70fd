// cuwire kernels, compiled by nvcc at build time into io/cuwire/cuda/kernels.fatbin and launched from
// io.cuwire.cuda.Kernels through cuLaunchKernel. Every entry point is extern "C" (unmangled names) and takes
// its element count as a 64-bit integer; grid-stride loops let any grid size cover any n.

#include <math_constants.h>
#include <stdint.h>

#define GRID_STRIDE_LOOP(i, n) \
    for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t) blockDim.x * gridDim.x)

// For each row r of d (rows x cols, row-major): index[r] = the first column holding the row's minimum,
// minimum[r] = that value. One thread per row.
template <typename T>
__device__ void argmin_rows(int64_t rows, int64_t cols, const T* __restrict__ d, int32_t* __restrict__ index,
                            T* __restrict__ minimum) {
    GRID_STRIDE_LOOP(r, rows) {
        const T* dr = d + r * cols;
        int64_t best = 0;
        T bestValue = dr[0];
        for (int64_t k = 1; k < cols; k++) {
            if (dr[k] < bestValue) {
                bestValue = dr[k];
                best = k;
            }
        }
        index[r] = (int32_t) best;
        minimum[r] = bestValue;
    }
}

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

// Squared Euclidean distances between the rows of x (rows x dims, row-major) and the rows of c
// (centers x dims, row-major): out[r * centers + k] = sum_j (x[r, j] - c[k, j])^2. One thread per (r, k).
__global__ void sq_dist_rows_f32(int64_t rows, int64_t centers, int64_t dims, const float* __restrict__ x,
                                 const float* __restrict__ c, float* __restrict__ out) {
    GRID_STRIDE_LOOP(t, rows * centers) {
        int64_t r = t / centers;
        int64_t k = t - r * centers;
        const float* xr = x + r * dims;
        const float* ck = c + k * dims;
        float acc = 0.0f;
        for (int64_t j = 0; j < dims; j++) {
            float d = xr[j] - ck[j];
            acc = fmaf(d, d, acc);
        }
        out[t] = acc;
    }
}

__global__ void sq_dist_rows_f64(int64_t rows, int64_t centers, int64_t dims, const double* __restrict__ x,
                                 const double* __restrict__ c, double* __restrict__ out) {
    GRID_STRIDE_LOOP(t, rows * centers) {
        int64_t r = t / centers;
        int64_t k = t - r * centers;
        const double* xr = x + r * dims;
        const double* ck = c + k * dims;
        double acc = 0.0;
        for (int64_t j = 0; j < dims; j++) {
            double d = xr[j] - ck[j];
            acc = fma(d, d, acc);
        }
        out[t] = acc;
    }
}

// For each row r of d (rows x cols, row-major): index[r] = the first column holding the row's minimum,
// minimum[r] = that value. One thread per row (argmin_rows, above the extern "C" block).
__global__ void argmin_rows_f32(int64_t rows, int64_t cols, const float* __restrict__ d,
                                int32_t* __restrict__ index, float* __restrict__ minimum) {
    argmin_rows(rows, cols, d, index, minimum);
}

__global__ void argmin_rows_f64(int64_t rows, int64_t cols, const double* __restrict__ d,
                                int32_t* __restrict__ index, double* __restrict__ minimum) {
    argmin_rows(rows, cols, d, index, minimum);
}

}  // extern "C"

// The compute backend of cuwire-ml (io.cuwire.cuda.MlKernels).
#include "ml_kernels.cuh"
