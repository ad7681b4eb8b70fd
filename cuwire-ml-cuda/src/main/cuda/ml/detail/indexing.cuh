// The implementation of ml/indexing.cuh.
#pragma once

#include "../common.cuh"

namespace {

// out row i = src row index[i], rows of `words` words of W.
template <typename W>
__device__ void ml_gather_rows(int64_t count, int64_t words, int64_t srcRows, const void* index, int32_t index64,
                               const W* src, W* out, unsigned long long* error) {
    GRID_STRIDE_LOOP(t, count * words) {
        int64_t i = t / words;
        int64_t w = t - i * words;
        int64_t row = index64 ? ((const int64_t*) index)[i] : (int64_t) ((const int32_t*) index)[i];
        if (row < 0 || row >= srcRows) {
            if (w == 0) {
                ml_report(error, i);
            }
            continue;
        }
        out[t] = src[row * words + w];
    }
}

template <typename T>
__device__ void ml_scatter_add_rows(int64_t n, int64_t cols, int64_t k, const T* src, const int32_t* index, T* out,
                                    unsigned long long* error) {
    GRID_STRIDE_LOOP(t, n * cols) {
        int64_t i = t / cols;
        int64_t j = t - i * cols;
        int32_t c = index[i];
        if (c < 0 || c >= k) {
            if (j == 0) {
                ml_report(error, i);
            }
            continue;
        }
        atomicAdd(out + (int64_t) c * cols + j, src[t]);
    }
}

template <typename T>
__device__ void ml_bincount(int64_t n, int64_t k, const int32_t* index, T* out, unsigned long long* error) {
    GRID_STRIDE_LOOP(i, n) {
        int32_t c = index[i];
        if (c < 0 || c >= k) {
            ml_report(error, i);
            continue;
        }
        atomicAdd(out + c, (T) 1);
    }
}

// Deterministic scatter-add, pass one. Block b (of parts x tiles, grid-stride) takes the rows
// [part * rowsPerPart, (part + 1) * rowsPerPart) and the 32 columns of its tile; warp w < lanes sums rows w, w + lanes,
// ... in order into its own k x 32 doubles of shared memory (no atomics: a (warp, column) is one thread), then the
// block writes the sum over its warps, in warp order, to partial[part] (parts x k x cols doubles). The order of every
// addition depends on the shape only, so the sums are the same from run to run (Lloyd's loop stops when two steps
// give the same centers). A label outside [0, k): its row in `error` (tile 0 reports), nothing added for it.
template <typename T>
__device__ void ml_scatter_sums(int64_t n, int64_t cols, int64_t k, int64_t parts, int64_t rowsPerPart,
                                int32_t lanes, const T* __restrict__ src, const int32_t* __restrict__ index,
                                double* __restrict__ partial, unsigned long long* error) {
    __shared__ double acc[ML_SCATTER_SHARED];
    const int32_t lane = threadIdx.x & 31;
    const int32_t warp = threadIdx.x >> 5;
    const int64_t tiles = (cols + 31) / 32;
    const int64_t slots = (int64_t) lanes * k * 32;
    for (int64_t b = blockIdx.x; b < parts * tiles; b += gridDim.x) {
        const int64_t part = b / tiles;
        const int64_t tile = b - part * tiles;
        const int64_t col = tile * 32 + lane;
        const bool inCols = col < cols;
        const int64_t r0 = part * rowsPerPart;
        const int64_t r1 = r0 + rowsPerPart < n ? r0 + rowsPerPart : n;
        for (int64_t e = threadIdx.x; e < slots; e += blockDim.x) {
            acc[e] = 0.0;
        }
        __syncthreads();
        if (warp < lanes) {
            double* mine = acc + (int64_t) warp * k * 32 + lane;
            for (int64_t base = r0 + warp; base < r1; base += 4 * (int64_t) lanes) {
                int32_t c[4];
                double v[4];
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    int64_t r = base + u * (int64_t) lanes;
                    c[u] = -1;
                    v[u] = 0.0;
                    if (r < r1) {
                        c[u] = index[r];
                        if (inCols) {
                            v[u] = (double) src[r * cols + col];
                        }
                    }
                }
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    int64_t r = base + u * (int64_t) lanes;
                    if (r >= r1) {
                        continue;
                    }
                    if (c[u] < 0 || c[u] >= k) {
                        if (tile == 0 && lane == 0) {
                            ml_report(error, r);
                        }
                    } else {
                        mine[(int64_t) c[u] * 32] += v[u];
                    }
                }
            }
        }
        __syncthreads();
        for (int64_t e = threadIdx.x; e < k * 32; e += blockDim.x) {
            int64_t c = e >> 5;
            int64_t j = tile * 32 + (e & 31);
            double s = 0.0;
            for (int32_t w = 0; w < lanes; w++) {
                s += acc[(int64_t) w * k * 32 + e];
            }
            if (j < cols) {
                partial[(part * k + c) * cols + j] = s;
            }
        }
        __syncthreads();
    }
}

// Deterministic scatter-add, pass two: out[e] += the sum over parts of partial[p][e], for e < elements (k x cols).
// A block takes 32 elements at a time: warp w sums parts w, w + 8, ... in order, then warp 0 adds the 8 warp sums in
// warp order and rounds once to T.
template <typename T>
__device__ void ml_scatter_finish(int64_t parts, int64_t elements, const double* __restrict__ partial, T* out) {
    __shared__ double sums[ML_BLOCK / 32][32];
    const int32_t lane = threadIdx.x & 31;
    const int32_t warp = threadIdx.x >> 5;
    const int32_t warps = blockDim.x >> 5;
    for (int64_t t = blockIdx.x; t * 32 < elements; t += gridDim.x) {
        const int64_t e = t * 32 + lane;
        double s = 0.0;
        if (e < elements) {
#pragma unroll 4
            for (int64_t p = warp; p < parts; p += warps) {
                s += partial[p * elements + e];
            }
        }
        sums[warp][lane] = s;
        __syncthreads();
        if (warp == 0 && e < elements) {
            double total = 0.0;
            for (int32_t w = 0; w < warps; w++) {
                total += sums[w][lane];
            }
            out[e] = (T) ((double) out[e] + total);
        }
        __syncthreads();
    }
}

// Bincount with per-block counters: each block counts its rows (grid-stride) into k shared 64-bit counters with
// shared atomics, then adds each nonzero count to out with one global atomic: whole numbers, so the sum is exact (below
// 2^53 in float64, 2^24 in float32) whatever the order. k <= ML_BINCOUNT_SHARED. Errors as ml_bincount.
template <typename T>
__device__ void ml_bincount_blocks(int64_t n, int64_t k, const int32_t* __restrict__ index, T* out,
                                   unsigned long long* error) {
    __shared__ unsigned long long counts[ML_BINCOUNT_SHARED];
    for (int64_t c = threadIdx.x; c < k; c += blockDim.x) {
        counts[c] = 0;
    }
    __syncthreads();
    GRID_STRIDE_LOOP(i, n) {
        int32_t c = index[i];
        if (c < 0 || c >= k) {
            ml_report(error, i);
            continue;
        }
        atomicAdd(counts + c, 1ULL);
    }
    __syncthreads();
    for (int64_t c = threadIdx.x; c < k; c += blockDim.x) {
        if (counts[c] != 0) {
            atomicAdd(out + c, (T) counts[c]);
        }
    }
}

// One thread per row: out row r (classes wide) = the counts of the k labels of row r.
template <typename T>
__device__ void ml_count_rows(int64_t rows, int64_t k, int64_t classes, const int32_t* labels, T* out,
                              unsigned long long* error) {
    GRID_STRIDE_LOOP(r, rows) {
        T* o = out + r * classes;
        for (int64_t c = 0; c < classes; c++) {
            o[c] = (T) 0;
        }
        const int32_t* l = labels + r * k;
        for (int64_t j = 0; j < k; j++) {
            int32_t c = l[j];
            if (c < 0 || c >= classes) {
                ml_report(error, r * k + j);
                continue;
            }
            o[c] += (T) 1;
        }
    }
}

}  // namespace
