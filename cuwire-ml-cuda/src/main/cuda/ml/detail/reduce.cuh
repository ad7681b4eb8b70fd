// The implementation of ml/reduce.cuh.
#pragma once

#include "../common.cuh"

namespace {

template <typename T>
__device__ void ml_reduce(int64_t n, int32_t op, const T* a, double* partial) {
    double acc = ml_identity(op);
    GRID_STRIDE_LOOP(i, n) {
        acc = ml_combine(op, acc, (double) a[i]);
    }
    ml_block_reduce(op, acc, partial + blockIdx.x);
}

// The sum of float32 a (16-byte aligned) in float64: each thread loads float4 vectors, four in flight (independent
// loads before their adds), grid-strided; the tail of n % 4 elements by the first threads. op is ML_SUM (the
// signature of ml_reduce's).
__device__ void ml_reduce_sum_v4(int64_t n, int32_t op, const float* a, double* partial) {
    const float4* v = reinterpret_cast<const float4*>(a);
    int64_t vectors = n / 4;
    int64_t stride = (int64_t) blockDim.x * gridDim.x;
    int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    double acc0 = 0;
    double acc1 = 0;
    for (; i + 3 * stride < vectors; i += 4 * stride) {
        float4 x0 = __ldg(v + i);
        float4 x1 = __ldg(v + i + stride);
        float4 x2 = __ldg(v + i + 2 * stride);
        float4 x3 = __ldg(v + i + 3 * stride);
        acc0 += ((double) x0.x + x0.y) + ((double) x0.z + x0.w) + ((double) x1.x + x1.y) + ((double) x1.z + x1.w);
        acc1 += ((double) x2.x + x2.y) + ((double) x2.z + x2.w) + ((double) x3.x + x3.y) + ((double) x3.z + x3.w);
    }
    for (; i < vectors; i += stride) {
        float4 x = __ldg(v + i);
        acc0 += ((double) x.x + x.y) + ((double) x.z + x.w);
    }
    int64_t t = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n % 4) {
        acc1 += (double) a[vectors * 4 + t];
    }
    ml_block_reduce(op, acc0 + acc1, partial + blockIdx.x);
}

template <typename T>
__device__ void ml_dot(int64_t n, const T* x, const T* y, double* partial) {
    double acc = 0;
    GRID_STRIDE_LOOP(i, n) {
        acc += (double) x[i] * (double) y[i];
    }
    ml_block_reduce(ML_SUM, acc, partial + blockIdx.x);
}

template <typename I>
__device__ void ml_count_equal(int64_t n, const I* a, const I* b, double* partial) {
    double acc = 0;
    GRID_STRIDE_LOOP(i, n) {
        if (a[i] == b[i]) {
            acc += 1;
        }
    }
    ml_block_reduce(ML_SUM, acc, partial + blockIdx.x);
}

template <typename T>
__device__ void ml_arg_rows(int64_t rows, int64_t cols, int32_t largest, const T* a, int32_t* index, T* best) {
    GRID_STRIDE_LOOP(r, rows) {
        const T* x = a + r * cols;
        int64_t arg = 0;
        T v = x[0];
        for (int64_t j = 1; j < cols; j++) {
            if (largest ? x[j] > v : x[j] < v) {
                v = x[j];
                arg = j;
            }
        }
        index[r] = (int32_t) arg;
        if (best != nullptr) {
            best[r] = v;
        }
    }
}

}  // namespace
