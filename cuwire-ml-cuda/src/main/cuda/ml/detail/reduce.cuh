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
