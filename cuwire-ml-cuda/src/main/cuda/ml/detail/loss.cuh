// The implementation of ml/loss.cuh.
#pragma once

#include "../common.cuh"

namespace {

// Binary (cols == 1: sigmoid, labels 0 or 1) or multinomial (softmax) cross-entropy of each row into rowLoss,
// its gradient in the logits into grad (may be z).
template <typename T>
__device__ void ml_cross_entropy(int64_t rows, int64_t cols, const T* z, const int32_t* labels, T* grad,
                                 double* rowLoss, unsigned long long* error) {
    int64_t classes = cols > 2 ? cols : 2;
    GRID_STRIDE_LOOP(r, rows) {
        int32_t y = labels[r];
        if (y < 0 || y >= classes) {
            ml_report(error, r);
            rowLoss[r] = 0;
            continue;
        }
        if (cols == 1) {
            double zi = (double) z[r];
            rowLoss[r] = fmax(zi, 0.0) - y * zi + log1p(exp(-fabs(zi)));
            grad[r] = (T) (ml_sigmoid(zi) - y);
        } else {
            const T* zr = z + r * cols;
            T* gr = grad + r * cols;
            double max = -CUDART_INF;
            for (int64_t j = 0; j < cols; j++) {
                max = fmax(max, (double) zr[j]);
            }
            double sum = 0;
            for (int64_t j = 0; j < cols; j++) {
                sum += exp((double) zr[j] - max);
            }
            double lse = max + log(sum);
            rowLoss[r] = lse - (double) zr[y];
            for (int64_t j = 0; j < cols; j++) {
                double g = exp((double) zr[j] - lse);
                gr[j] = (T) (j == y ? g - 1 : g);
            }
        }
    }
}

}  // namespace
