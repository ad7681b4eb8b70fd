// The implementation of ml/elementwise.cuh.
#pragma once

#include "../common.cuh"

namespace {

template <typename T>
__device__ void ml_fill(int64_t n, T value, T* y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = value;
    }
}

template <typename T>
__device__ void ml_map(int64_t n, int32_t op, const T* in, T* out) {
    GRID_STRIDE_LOOP(i, n) {
        out[i] = (T) ml_unary(op, (double) in[i]);
    }
}

template <typename T>
__device__ void ml_broadcast_rows(int64_t n, int64_t cols, int32_t op, T* a, const T* v) {
    GRID_STRIDE_LOOP(i, n) {
        a[i] = (T) ml_binary(op, (double) a[i], (double) v[i % cols]);
    }
}

template <typename T>
__device__ void ml_softmax_rows(int64_t rows, int64_t cols, const T* in, T* out) {
    GRID_STRIDE_LOOP(r, rows) {
        const T* x = in + r * cols;
        T* y = out + r * cols;
        double max = -CUDART_INF;
        for (int64_t j = 0; j < cols; j++) {
            max = fmax(max, (double) x[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < cols; j++) {
            sum += exp((double) x[j] - max);
        }
        for (int64_t j = 0; j < cols; j++) {
            y[j] = (T) (exp((double) x[j] - max) / sum);
        }
    }
}

}  // namespace
