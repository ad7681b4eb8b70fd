// The implementation of ml/distance.cuh.
#pragma once

#include "../common.cuh"

namespace {

// Row groups: `lanes` consecutive threads of one warp (a power of two, at most 32) share a row; lane l reads the
// row's elements l, l + lanes, ... ML_ROW_UNROLL loads at a time, all issued before they are used, so that enough
// bytes are in flight to keep the memory busy, and a warp reads 32 / lanes rows of contiguous sectors at once. The
// loop over rows is warp-uniform (every lane of a warp runs while the warp's first row is in range, lanes past the
// last row add zeros), so the shuffles of ml_group_sum always see the whole warp: rows are visited as
//     for (r = thread / lanes, first = (thread & ~31) / lanes; first < rows; r += step, first += step)
// with step = threads / lanes (lanes divides the block, so every warp is whole).

// The sum of v over the `lanes` lanes of a row group (every lane gets it).
template <typename A>
__device__ __forceinline__ A ml_group_sum(A v, int32_t lanes) {
    for (int32_t offset = lanes >> 1; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    return v;
}

// Loads the elements j0, j0 + lanes, ... (ML_ROW_UNROLL of them) of a row into v, zeros past cols: all the loads are
// issued before any is used.
template <typename T>
__device__ __forceinline__ void ml_load_row_chunk(const T* __restrict__ row, int64_t j0, int32_t lanes, int64_t cols,
                                                  T (&v)[ML_ROW_UNROLL]) {
#pragma unroll
    for (int u = 0; u < ML_ROW_UNROLL; u++) {
        int64_t j = j0 + (int64_t) u * lanes;
        v[u] = j < cols ? row[j] : (T) 0;
    }
}

// y[r] = alpha * (row r of a) . x + beta * y[r] (y ignored when beta is 0), for a row-major rows x cols a: one row
// group per row, products summed in double.
template <typename T>
__device__ void ml_gemv_rows(int64_t rows, int64_t cols, int32_t lanes, double alpha, const T* __restrict__ a,
                             const T* __restrict__ x, double beta, T* __restrict__ y) {
    int64_t thread = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int64_t step = (int64_t) blockDim.x * gridDim.x / lanes;
    int32_t lane = (int32_t) (threadIdx.x & (lanes - 1));
    for (int64_t r = thread / lanes, first = (thread & ~(int64_t) 31) / lanes; first < rows;
         r += step, first += step) {
        bool valid = r < rows;
        double acc = 0;
        if (valid) {
            const T* ar = a + r * cols;
            for (int64_t j0 = lane; j0 < cols; j0 += (int64_t) ML_ROW_UNROLL * lanes) {
                T v[ML_ROW_UNROLL];
                ml_load_row_chunk(ar, j0, lanes, cols, v);
#pragma unroll
                for (int u = 0; u < ML_ROW_UNROLL; u++) {
                    int64_t j = j0 + (int64_t) u * lanes;
                    if (j < cols) {
                        acc += (double) v[u] * (double) x[j];
                    }
                }
            }
        }
        acc = ml_group_sum(acc, lanes);
        if (valid && lane == 0) {
            double out = alpha * acc;
            if (beta != 0) {
                out += beta * (double) y[r];
            }
            y[r] = (T) out;
        }
    }
}

// ml_gemv_rows for float32 rows of a multiple of 4 elements starting 16-byte aligned: float4 loads (lane l of a row
// group takes the row's float4s l, l + lanes, ...; lanes covers a row's float4s in one step up to 128 columns), and
// R rows a thread per step, their loads all issued before any is used: R x 16 bytes in flight a thread instead of
// the scalar kernel's 8 x 4, and one float64 conversion per 4 elements (each float4's products summed by fmaf in
// float, then added to the row's double) instead of two per element. A step's rows are g, g + groups, ... (groups: the
// row groups of the grid), so a warp's load reads 512 contiguous bytes at 16 lanes a row; the loop over steps is
// warp-uniform as in ml_gemv_rows.
template <int R>
__device__ void ml_gemv_rows_v4(int64_t rows, int64_t cols, int32_t lanes, double alpha, const float* __restrict__ a,
                                const float* __restrict__ x, double beta, float* __restrict__ y) {
    int64_t c4 = cols >> 2;
    int64_t thread = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int64_t groups = (int64_t) blockDim.x * gridDim.x / lanes;
    int64_t g = thread / lanes;
    int64_t first = (thread & ~(int64_t) 31) / lanes;
    int32_t lane = (int32_t) (threadIdx.x & (lanes - 1));
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (int64_t base = 0; base + first < rows; base += (int64_t) R * groups) {
        double acc[R];
#pragma unroll
        for (int i = 0; i < R; i++) {
            acc[i] = 0;
        }
        for (int64_t j = lane; j < c4; j += lanes) {
            float4 v[R];
#pragma unroll
            for (int i = 0; i < R; i++) {
                int64_t r = base + g + (int64_t) i * groups;
                v[i] = r < rows ? __ldg(a4 + r * c4 + j) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            float4 w = __ldg(x4 + j);
#pragma unroll
            for (int i = 0; i < R; i++) {
                float s = v[i].x * w.x;
                s = fmaf(v[i].y, w.y, s);
                s = fmaf(v[i].z, w.z, s);
                s = fmaf(v[i].w, w.w, s);
                acc[i] += (double) s;
            }
        }
#pragma unroll
        for (int i = 0; i < R; i++) {
            double s = ml_group_sum(acc[i], lanes);
            int64_t r = base + g + (int64_t) i * groups;
            if (r < rows && lane == 0) {
                double out = alpha * s;
                if (beta != 0) {
                    out += beta * (double) y[r];
                }
                y[r] = (float) out;
            }
        }
    }
}

// The end of a row of the nearest-rows kernels: sums each center's partial distances (double, or float for
// ml_nearest_rows_regs) over the row group (every lane takes part in the shuffles), picks the first smallest, and has
// the writer lane store it in index[r] and, unless best is null, the distance in best[r].
template <int KMAX, typename A, typename T>
__device__ __forceinline__ void ml_store_nearest(const A (&acc)[KMAX], int64_t k, int32_t lanes, bool writer,
                                                 int64_t r, int32_t* __restrict__ index, T* __restrict__ best) {
    int32_t arg = 0;
    A nearest = 0;
#pragma unroll
    for (int q = 0; q < KMAX; q++) {
        if (q < k) {
            A s = ml_group_sum(acc[q], lanes);
            if (q == 0 || s < nearest) {
                nearest = s;
                arg = q;
            }
        }
    }
    if (writer) {
        index[r] = arg;
        if (best != nullptr) {
            best[r] = (T) nearest;
        }
    }
}

// The partial squared distances of lane `lane`'s columns of row xr to every center (acc[q] += ...), for
// ml_nearest_rows. Scalar (any T): elements j0, j0 + lanes, ... ML_ROW_UNROLL loads at a time (ml_load_row_chunk),
// centers as doubles, differences and squares in double.
template <int KMAX, typename T>
__device__ __forceinline__ void ml_nearest_partials(const T* __restrict__ xr, int64_t cols, int64_t k, int32_t lane,
                                                    int32_t lanes, const double* centers, double (&acc)[KMAX]) {
    for (int64_t j0 = lane; j0 < cols; j0 += (int64_t) ML_ROW_UNROLL * lanes) {
        T v[ML_ROW_UNROLL];
        ml_load_row_chunk(xr, j0, lanes, cols, v);
#pragma unroll
        for (int u = 0; u < ML_ROW_UNROLL; u++) {
            int64_t j = j0 + (int64_t) u * lanes;
            if (j < cols) {
                double e = (double) v[u];
#pragma unroll
                for (int q = 0; q < KMAX; q++) {
                    if (q < k) {
                        double diff = e - centers[q * cols + j];
                        acc[q] += diff * diff;
                    }
                }
            }
        }
    }
}

// Loads 8 floats from p: two float4 loads where the run is whole, else element by element (zeros past the end).
__device__ __forceinline__ void ml_load_run8(const float* p, bool whole, int64_t left, float (&v)[8]) {
    if (whole) {
        float4 a = *reinterpret_cast<const float4*>(p);
        float4 b = *reinterpret_cast<const float4*>(p + 4);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
        v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    } else {
#pragma unroll
        for (int u = 0; u < 8; u++) {
            v[u] = u < left ? p[u] : 0.0f;
        }
    }
}

// ml_nearest_partials for float32 rows of a multiple of 4 elements starting 16-byte aligned: each lane takes runs of
// 8 contiguous elements (two float4 loads) and reads the matching centers from shared memory as float4, so a run
// costs 2 shared loads per center instead of 8; differences and squares in float, each run's sum added to a double
// per center. The float64 pipe and scalar shared loads bounded the scalar path at 38% of the H200's copy bandwidth
// on 10M x 64 rows with 8 centers.
template <int KMAX>
__device__ __forceinline__ void ml_nearest_partials_v4(const float* __restrict__ xr, int64_t cols, int64_t k,
                                                       int32_t lane, int32_t lanes, const float* centers,
                                                       double (&acc)[KMAX]) {
    for (int64_t j = (int64_t) lane * 8; j < cols; j += (int64_t) lanes * 8) {
        bool whole = j + 8 <= cols;
        float v[8];
        ml_load_run8(xr + j, whole, cols - j, v);
#pragma unroll
        for (int q = 0; q < KMAX; q++) {
            if (q < k) {
                float w[8];
                ml_load_run8(centers + q * cols + j, whole, cols - j, w);
                float s = 0.0f;
#pragma unroll
                for (int u = 0; u < 8; u++) {
                    float d = v[u] - w[u];
                    s = fmaf(d, d, s);
                }
                acc[q] += (double) s;
            }
        }
    }
}

// The shared-memory centers of ml_nearest_rows: doubles for the scalar path, floats for the float4 one.
template <bool VEC>
struct MlCenters {
    typedef double Type;
};

template <>
struct MlCenters<true> {
    typedef float Type;
};

// For each row of x (rows x cols): index[r] = the nearest of the k rows of c (k x cols, k <= KMAX,
// k * cols <= ML_NEAREST_SHARED) by squared Euclidean distance, the first of equals, and best[r] that distance
// (unless best is null). Reads x once: the centers sit in shared memory, each lane keeps the partial sums of its
// columns for every center (ml_nearest_partials, or with VEC, for float32 rows of a multiple of 4 elements from a
// 16-byte aligned start, ml_nearest_partials_v4), a row group adds them up in double.
template <int KMAX, bool VEC, typename T>
__device__ void ml_nearest_rows(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const T* __restrict__ x,
                                const T* __restrict__ c, int32_t* __restrict__ index, T* __restrict__ best) {
    typedef typename MlCenters<VEC>::Type C;
    __shared__ __align__(16) C centers[ML_NEAREST_SHARED];
    for (int64_t i = threadIdx.x; i < k * cols; i += blockDim.x) {
        centers[i] = (C) c[i];
    }
    __syncthreads();
    int64_t thread = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int64_t step = (int64_t) blockDim.x * gridDim.x / lanes;
    int32_t lane = (int32_t) (threadIdx.x & (lanes - 1));
    for (int64_t r = thread / lanes, first = (thread & ~(int64_t) 31) / lanes; first < rows;
         r += step, first += step) {
        bool valid = r < rows;
        double acc[KMAX];
#pragma unroll
        for (int q = 0; q < KMAX; q++) {
            acc[q] = 0;
        }
        if (valid) {
            if constexpr (VEC) {
                ml_nearest_partials_v4<KMAX>(x + r * cols, cols, k, lane, lanes, centers, acc);
            } else {
                ml_nearest_partials<KMAX>(x + r * cols, cols, k, lane, lanes, centers, acc);
            }
        }
        ml_store_nearest<KMAX>(acc, k, lanes, valid && lane == 0, r, index, best);
    }
}

// ml_nearest_rows for float32 with the centers in registers. With `lanes` threads per row and at most RUNS chunks
// of 8 elements per lane (cols <= RUNS x 8 x lanes), a lane reads the same columns of every row, so it loads its
// columns of every center once, before the first row (KMAX x RUNS x 8 floats, zeros past k and past cols), and a
// row costs no shared-memory load. VEC (float32 rows of a multiple of 4 elements from a 16-byte aligned start): a
// lane's chunk is 8 contiguous elements, two float4 loads (one for the last 4 of a row of 8m + 4); otherwise chunk t
// of lane l holds the elements l + 8 t lanes + u lanes (u < 8), coalesced scalar loads as in ml_load_row_chunk. Each
// center's distance is summed in float (differences and squares by fmaf, then the row group's shuffles), and the
// next row's elements are loaded before the current row's distances are computed, so two rows' loads are in flight
// per thread. Rows as in the other row-group kernels (warp-uniform loop; lanes past the last row compute zeros).
template <bool VEC>
__device__ __forceinline__ int64_t ml_regs_column(int32_t lane, int32_t lanes, int t, int u) {
    return VEC ? ((int64_t) t * lanes + lane) * 8 + u : (int64_t) lane + (int64_t) t * 8 * lanes + (int64_t) u * lanes;
}

// Loads lane `lane`'s elements of row r of x into v (zeros past cols, and all zeros when r >= rows).
template <int RUNS, bool VEC>
__device__ __forceinline__ void ml_regs_load(const float* __restrict__ x, int64_t r, int64_t rows, int64_t cols,
                                             int32_t lane, int32_t lanes, float (&v)[RUNS][8]) {
    const float* xr = x + r * cols;
#pragma unroll
    for (int t = 0; t < RUNS; t++) {
        if (VEC) {
            int64_t j = ml_regs_column<true>(lane, lanes, t, 0);
            int64_t rest = r < rows ? cols - j : 0;
            float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            float4 b = a;
            if (rest >= 4) {
                a = *reinterpret_cast<const float4*>(xr + j);
            }
            if (rest >= 8) {
                b = *reinterpret_cast<const float4*>(xr + j + 4);
            }
            v[t][0] = a.x; v[t][1] = a.y; v[t][2] = a.z; v[t][3] = a.w;
            v[t][4] = b.x; v[t][5] = b.y; v[t][6] = b.z; v[t][7] = b.w;
        } else {
#pragma unroll
            for (int u = 0; u < 8; u++) {
                int64_t j = ml_regs_column<false>(lane, lanes, t, u);
                v[t][u] = r < rows && j < cols ? xr[j] : 0.0f;
            }
        }
    }
}

template <int KMAX, int RUNS, bool VEC>
__device__ void ml_nearest_rows_regs(int64_t rows, int64_t cols, int64_t k, int32_t lanes,
                                     const float* __restrict__ x, const float* __restrict__ c,
                                     int32_t* __restrict__ index, float* __restrict__ best) {
    int64_t thread = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int64_t step = (int64_t) blockDim.x * gridDim.x / lanes;
    int32_t lane = (int32_t) (threadIdx.x & (lanes - 1));
    float w[KMAX][RUNS][8];
#pragma unroll
    for (int q = 0; q < KMAX; q++) {
#pragma unroll
        for (int t = 0; t < RUNS; t++) {
#pragma unroll
            for (int u = 0; u < 8; u++) {
                int64_t j = ml_regs_column<VEC>(lane, lanes, t, u);
                w[q][t][u] = q < k && j < cols ? c[q * cols + j] : 0.0f;
            }
        }
    }
    // One chunk a lane (RUNS == 1): the next row's loads are issued before this row's distances. More chunks already
    // put RUNS loads of 32 bytes in flight per row, and their registers would not fit twice.
    const bool prefetch = RUNS == 1;
    int64_t r = thread / lanes;
    int64_t first = (thread & ~(int64_t) 31) / lanes;
    float v[RUNS][8];
    if (prefetch) {
        ml_regs_load<RUNS, VEC>(x, r, rows, cols, lane, lanes, v);
    }
    for (; first < rows; r += step, first += step) {
        float next[RUNS][8];
        if (prefetch) {
            ml_regs_load<RUNS, VEC>(x, r + step, rows, cols, lane, lanes, next);
        } else {
            ml_regs_load<RUNS, VEC>(x, r, rows, cols, lane, lanes, v);
        }
        float acc[KMAX];
#pragma unroll
        for (int q = 0; q < KMAX; q++) {
            float s = 0.0f;
            if (q < k) {
#pragma unroll
                for (int t = 0; t < RUNS; t++) {
#pragma unroll
                    for (int u = 0; u < 8; u++) {
                        float d = v[t][u] - w[q][t][u];
                        s = fmaf(d, d, s);
                    }
                }
            }
            acc[q] = s;
        }
        ml_store_nearest<KMAX>(acc, k, lanes, r < rows && lane == 0, r, index, best);
        if (prefetch) {
#pragma unroll
            for (int t = 0; t < RUNS; t++) {
#pragma unroll
                for (int u = 0; u < 8; u++) {
                    v[t][u] = next[t][u];
                }
            }
        }
    }
}

// The k neighbors of each query (rows x k: ids of rows of x plus idOffset, distances) recomputed exactly: dist[r, j] =
// the sum over columns of (q[r, c] - x[id - idOffset, c])², differences in double and each term added by fma in
// column order (the CPU backend's kNearestRows sums the same way, so both give the same bits), then the row sorted
// by (distance as ml_compare orders it, id) by insertion: a selection on ||q||² - 2 q·x + ||x||² leaves its list
// nearly sorted, so the sort moves only the near-ties the rounding swapped. One thread a query. An id outside the
// rows of x (never, from kNearestRows's own selection) gets a NaN distance.
template <typename T>
__device__ void ml_exact_neighbors(int64_t rows, int64_t k, int64_t cols, int64_t xRows, int64_t idOffset,
                                   const T* __restrict__ q, const T* __restrict__ x, T* __restrict__ dist,
                                   int64_t* __restrict__ ids) {
    GRID_STRIDE_LOOP(r, rows) {
        const T* qr = q + r * cols;
        T* dr = dist + r * k;
        int64_t* ir = ids + r * k;
        for (int64_t j = 0; j < k; j++) {
            int64_t id = ir[j];
            int64_t row = id - idOffset;
            double s = 0;
            if (row < 0 || row >= xRows) {
                s = CUDART_NAN;
            } else {
                const T* xr = x + row * cols;
                for (int64_t c = 0; c < cols; c++) {
                    double e = (double) qr[c] - (double) xr[c];
                    s = fma(e, e, s);
                }
            }
            T v = (T) s;
            int64_t p = j;
            while (p > 0 && (ml_compare((double) dr[p - 1], (double) v) > 0
                             || (ml_compare((double) dr[p - 1], (double) v) == 0 && ir[p - 1] > id))) {
                dr[p] = dr[p - 1];
                ir[p] = ir[p - 1];
                p--;
            }
            dr[p] = v;
            ir[p] = id;
        }
    }
}

template <typename T>
__device__ void ml_row_sq_norms(int64_t rows, int64_t cols, const T* x, T* norms) {
    GRID_STRIDE_LOOP(r, rows) {
        const T* xr = x + r * cols;
        double acc = 0;
        for (int64_t j = 0; j < cols; j++) {
            double e = (double) xr[j];
            acc += e * e;
        }
        norms[r] = (T) acc;
    }
}

// out[i, j] = max(0, out[i, j] + xn[i] + yn[j]) for an n x m out holding -2 x.y (NaN stays NaN).
template <typename T>
__device__ void ml_add_norms_clamp(int64_t n, int64_t m, T* out, const T* xn, const T* yn) {
    GRID_STRIDE_LOOP(t, n * m) {
        int64_t i = t / m;
        int64_t j = t - i * m;
        double v = (double) out[t] + (double) xn[i] + (double) yn[j];
        out[t] = (T) (v < 0 ? 0.0 : v);
    }
}

}  // namespace
