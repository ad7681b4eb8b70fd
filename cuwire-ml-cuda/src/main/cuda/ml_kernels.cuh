// The kernels of cuwire-ml's CUDA compute backend, included into ml_kernels.cu and launched from
// io.cuwire.ml.cuda.internal.MlKernels. Conventions, as in cuwire-cuda's kernels.cu: extern "C" entry points, 64-bit
// counts and indices, grid-stride loops (any grid covers any n). Launches use blocks of ML_BLOCK threads
// (io.cuwire.cuda.KernelModule.BLOCK); the
// block reductions rely on it. Arithmetic is done in double precision whatever the element type, so that a float32
// result is the double result rounded once, as on cuwire's CPU backend; only the cuBLAS products, the float32
// atomics of ml_scatter_add_rows (more than 192 rows out), the float32 sum of tree outputs beyond 8 classes and the
// float32 nearest-rows distances of ml_nearest_rows_v4 (runs of 8) and ml_nearest_rows_regs (whole rows) accumulate
// in float32. The top-k selections compare values exactly (as ordered integers), whatever the element type.
//
// Arguments that may alias (in and out of map, softmax, cross-entropy) are not __restrict__. Kernels that validate
// values report the smallest failing position with atomicMin into an unsigned 64-bit error word that the host
// filled with INT64_MAX before the launch.

#define ML_BLOCK 256
#define ML_FOREST_CHUNK 8
// Row-group kernels (gemv rows, nearest rows): the elements of a row each lane loads before it computes.
#define ML_ROW_UNROLL 8
// Nearest rows: the centers (as doubles) a block holds in shared memory, k x cols at most.
#define ML_NEAREST_SHARED 4096
// Deterministic scatter-add: the doubles of a block's per-warp sums (warps x k x 32), 48 KiB: k <= 192.
#define ML_SCATTER_SHARED 6144
// Bincount with per-block counters: the most bins.
#define ML_BINCOUNT_SHARED 4096

namespace {

enum MlUnary { ML_EXP = 0, ML_LOG = 1, ML_SQRT = 2, ML_SIGMOID = 3 };
enum MlBinary { ML_ADD = 0, ML_SUB = 1, ML_MUL = 2, ML_DIV = 3 };
enum MlReduce { ML_SUM = 0, ML_MIN = 1, ML_MAX = 2 };

__device__ __forceinline__ double ml_sigmoid(double x) {
    if (x >= 0) {
        return 1.0 / (1.0 + exp(-x));
    }
    double e = exp(x);
    return e / (1.0 + e);
}

__device__ __forceinline__ double ml_unary(int32_t op, double x) {
    switch (op) {
        case ML_EXP: return exp(x);
        case ML_LOG: return log(x);
        case ML_SQRT: return sqrt(x);
        default: return ml_sigmoid(x);
    }
}

__device__ __forceinline__ double ml_binary(int32_t op, double a, double b) {
    switch (op) {
        case ML_ADD: return a + b;
        case ML_SUB: return a - b;
        case ML_MUL: return a * b;
        default: return a / b;
    }
}

// Java's Math.min / Math.max (NaN wins; -0.0 is below 0.0) and the sum.
__device__ __forceinline__ double ml_combine(int32_t op, double a, double b) {
    if (op == ML_SUM) {
        return a + b;
    }
    if (a != a) {
        return a;
    }
    if (b != b) {
        return b;
    }
    if (a == b) {
        bool negA = signbit(a);
        return (op == ML_MIN) == negA ? a : b;
    }
    if (op == ML_MIN) {
        return b < a ? b : a;
    }
    return b > a ? b : a;
}

__device__ __forceinline__ double ml_identity(int32_t op) {
    return op == ML_SUM ? 0.0 : (op == ML_MIN ? CUDART_INF : -CUDART_INF);
}

// Java's Double.compare: -0.0 below 0.0, NaN above everything and equal to itself.
__device__ __forceinline__ int ml_compare(double a, double b) {
    if (a < b) {
        return -1;
    }
    if (a > b) {
        return 1;
    }
    bool nanA = a != a;
    bool nanB = b != b;
    if (nanA || nanB) {
        return nanA == nanB ? 0 : (nanA ? 1 : -1);
    }
    bool negA = signbit(a);
    bool negB = signbit(b);
    return negA == negB ? 0 : (negA ? -1 : 1);
}

__device__ __forceinline__ void ml_report(unsigned long long* error, int64_t position) {
    atomicMin(error, (unsigned long long) position);
}

// Combines v over the block (blockDim.x == ML_BLOCK); thread 0 writes the result to *out.
__device__ __forceinline__ void ml_block_reduce(int32_t op, double v, double* out) {
    __shared__ double partial[ML_BLOCK];
    partial[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int stride = ML_BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] = ml_combine(op, partial[threadIdx.x], partial[threadIdx.x + stride]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        *out = partial[0];
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

// For each row of x (rows x cols): index[r] = the nearest of the k rows of c (k x cols, k <= KMAX,
// k * cols <= ML_NEAREST_SHARED) by squared Euclidean distance, the first of equals, and best[r] that distance
// (unless best is null). Reads x once: the centers sit in shared memory as doubles, each lane keeps the partial
// sums of its columns for every center, a row group adds them up. Sums in double.
template <int KMAX, typename T>
__device__ void ml_nearest_rows(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const T* __restrict__ x,
                                const T* __restrict__ c, int32_t* __restrict__ index, T* __restrict__ best) {
    __shared__ double centers[ML_NEAREST_SHARED];
    for (int64_t i = threadIdx.x; i < k * cols; i += blockDim.x) {
        centers[i] = (double) c[i];
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
            const T* xr = x + r * cols;
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
        ml_store_nearest<KMAX>(acc, k, lanes, valid && lane == 0, r, index, best);
    }
}

// ml_nearest_rows for float32 rows of a multiple of 4 elements starting 16-byte aligned: each lane of a row group
// takes runs of 8 contiguous elements (two float4 loads) and reads the matching centers from shared memory as
// float4, so a run costs 2 shared loads per center instead of 8; differences and squares in float, each run's sum
// added to a double per center. The float64 pipe and scalar shared loads bounded ml_nearest_rows at 38% of the
// H200's copy bandwidth on 10M x 64 rows with 8 centers.
template <int KMAX>
__device__ void ml_nearest_rows_v4(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* __restrict__ x,
                                   const float* __restrict__ c, int32_t* __restrict__ index,
                                   float* __restrict__ best) {
    __shared__ __align__(16) float centers[ML_NEAREST_SHARED];
    for (int64_t i = threadIdx.x; i < k * cols; i += blockDim.x) {
        centers[i] = c[i];
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
            const float* xr = x + r * cols;
            for (int64_t j = (int64_t) lane * 8; j < cols; j += (int64_t) lanes * 8) {
                float v[8];
                bool whole = j + 8 <= cols;
                if (whole) {
                    float4 a = *reinterpret_cast<const float4*>(xr + j);
                    float4 b = *reinterpret_cast<const float4*>(xr + j + 4);
                    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
                    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
                } else {
#pragma unroll
                    for (int u = 0; u < 8; u++) {
                        v[u] = j + u < cols ? xr[j + u] : 0.0f;
                    }
                }
#pragma unroll
                for (int q = 0; q < KMAX; q++) {
                    if (q < k) {
                        const float* cq = centers + q * cols + j;
                        float w[8];
                        if (whole) {
                            float4 a = *reinterpret_cast<const float4*>(cq);
                            float4 b = *reinterpret_cast<const float4*>(cq + 4);
                            w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
                            w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
                        } else {
#pragma unroll
                            for (int u = 0; u < 8; u++) {
                                w[u] = j + u < cols ? cq[u] : 0.0f;
                            }
                        }
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

// One thread per row: the k smallest values of the row, ascending, equal values by column, by insertion into the
// output row itself (exactly the CPU backend's selection). O(cols k) a thread: the host takes it only above the k of
// the parallel selections below (ml_select_*, ml_select_radix_*), or for rows of 2^31 columns and more.
template <typename T>
__device__ void ml_smallest_k(int64_t rows, int64_t cols, int64_t k, int64_t idOffset, const T* values,
                              T* outValues, int64_t* outIds) {
    if (k <= 0) {
        return;
    }
    GRID_STRIDE_LOOP(r, rows) {
        const T* v = values + r * cols;
        T* bv = outValues + r * k;
        int64_t* bi = outIds + r * k;
        int64_t count = 0;
        for (int64_t j = 0; j < cols; j++) {
            T x = v[j];
            if (count == k && ml_compare((double) x, (double) bv[k - 1]) >= 0) {
                continue;
            }
            int64_t p = count < k ? count++ : k - 1;
            while (p > 0 && ml_compare((double) bv[p - 1], (double) x) > 0) {
                bv[p] = bv[p - 1];
                bi[p] = bi[p - 1];
                p--;
            }
            bv[p] = x;
            bi[p] = j + idOffset;
        }
    }
}

// ml_smallest_k's contract, many threads a row (ml_select_*). A selection key orders the pairs (value, column) as
// ml_compare orders the values (Double.compare: -0.0 below 0.0, every NaN above +inf and equal to every other NaN),
// then by column. Keys are unique within a row, so its k smallest keys are one exact answer, whatever order the
// threads compare them in. A value's part of the key is its IEEE bits made monotone as unsigned integers (sign set:
// every bit flipped; else the sign bit set; any NaN: all ones): a float32 key is one word, value bits << 32 | column,
// a float64 key the 64 value bits and a 32-bit column. Columns are below 2^31 (the host checks).
//
// A group of threads (a warp, or the whole block) takes a row, or one slice of a row: each thread keeps the KMAX
// smallest keys of the elements it reads (every group-th) sorted in registers, admitting a key only below its own
// k-th; then k rounds each find the smallest head of the threads' lists (warp shuffles, then for a block one step
// through shared memory) and pop it from the one thread that holds it. Every one of the row's k smallest keys is
// among the k smallest of the thread that read it, so the rounds emit exactly the row's k smallest, ascending. Few
// long rows are cut into `parts` slices and selected in two launches: ml_select_* writes each slice's k smallest keys
// to a scratch array (padded with the no-key, above every key, where a slice has fewer than k elements) and
// ml_select_merge_* selects each row's k smallest of its parts x k keys.
#define ML_WARPS (ML_BLOCK / 32)

__device__ __forceinline__ uint32_t ml_order_bits(float v) {
    uint32_t b = __float_as_uint(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return 0xffffffffu;
    }
    return (b & 0x80000000u) != 0 ? ~b : b | 0x80000000u;
}

__device__ __forceinline__ unsigned long long ml_order_bits(double v) {
    unsigned long long b = (unsigned long long) __double_as_longlong(v);
    if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) {
        return ~0ull;
    }
    return (b >> 63) != 0 ? ~b : b | 0x8000000000000000ull;
}

template <typename T>
struct MlSelect;

template <>
struct MlSelect<float> {
    typedef unsigned long long Key;
    static const int WORDS = 1;

    static __device__ __forceinline__ Key make(float v, int64_t column) {
        return ((Key) ml_order_bits(v) << 32) | (uint32_t) column;
    }
    static __device__ __forceinline__ Key none() {
        return ~0ull;
    }
    static __device__ __forceinline__ bool less(Key a, Key b) {
        return a < b;
    }
    static __device__ __forceinline__ bool same(Key a, Key b) {
        return a == b;
    }
    static __device__ __forceinline__ int64_t column(Key a) {
        return (int64_t) (uint32_t) a;
    }
    static __device__ __forceinline__ Key shuffleXor(Key a, int offset) {
        return __shfl_xor_sync(0xffffffffu, a, offset);
    }
    static __device__ __forceinline__ void save(unsigned long long* at, Key a) {
        at[0] = a;
    }
    static __device__ __forceinline__ Key load(const unsigned long long* at) {
        return at[0];
    }
};

// A float64 key: the value's 64 bits as two 32-bit halves and the column, 12 bytes without padding (a struct with
// a 64-bit member would carry 4 bytes of padding through every register move). In memory (scratch, shared heads) it
// is two words, value and column.
struct MlKeyF64 {
    uint32_t lo;
    uint32_t hi;
    uint32_t column;
};

template <>
struct MlSelect<double> {
    typedef MlKeyF64 Key;
    static const int WORDS = 2;

    static __device__ __forceinline__ unsigned long long value(Key a) {
        return ((unsigned long long) a.hi << 32) | a.lo;
    }
    static __device__ __forceinline__ Key of(unsigned long long value, uint32_t column) {
        Key key;
        key.lo = (uint32_t) value;
        key.hi = (uint32_t) (value >> 32);
        key.column = column;
        return key;
    }
    static __device__ __forceinline__ Key make(double v, int64_t column) {
        return of(ml_order_bits(v), (uint32_t) column);
    }
    static __device__ __forceinline__ Key none() {
        return of(~0ull, 0xffffffffu);
    }
    static __device__ __forceinline__ bool less(Key a, Key b) {
        unsigned long long va = value(a);
        unsigned long long vb = value(b);
        return va < vb || (va == vb && a.column < b.column);
    }
    static __device__ __forceinline__ bool same(Key a, Key b) {
        return a.lo == b.lo && a.hi == b.hi && a.column == b.column;
    }
    static __device__ __forceinline__ int64_t column(Key a) {
        return (int64_t) a.column;
    }
    static __device__ __forceinline__ Key shuffleXor(Key a, int offset) {
        Key key;
        key.lo = __shfl_xor_sync(0xffffffffu, a.lo, offset);
        key.hi = __shfl_xor_sync(0xffffffffu, a.hi, offset);
        key.column = __shfl_xor_sync(0xffffffffu, a.column, offset);
        return key;
    }
    static __device__ __forceinline__ void save(unsigned long long* at, Key a) {
        at[0] = value(a);
        at[1] = a.column;
    }
    static __device__ __forceinline__ Key load(const unsigned long long* at) {
        return of(at[0], (uint32_t) at[1]);
    }
};

// One thread's k smallest keys, ascending, in key[0 .. k-1] (registers: every index is a constant after unrolling;
// key[k .. KMAX-1] stay the no-key). A key enters when it is below key[k - 1] (`limit`): each key[i] becomes key[i-1]
// when the new key is below that, else the new key when it is below key[i] (so it lands after its last smaller one, and
// the k-th falls out), as ml_smallest_k's insertion does by shifting.
template <typename S, int KMAX>
struct MlTopK {
    typename S::Key key[KMAX];
    typename S::Key limit;

    __device__ __forceinline__ void clear() {
#pragma unroll
        for (int i = 0; i < KMAX; i++) {
            key[i] = S::none();
        }
        limit = S::none();
    }

    __device__ __forceinline__ void offer(typename S::Key x, int64_t k) {
        if (!S::less(x, limit)) {
            return;
        }
#pragma unroll
        for (int i = KMAX - 1; i > 0; i--) {
            if (i < k) {
                key[i] = S::less(x, key[i - 1]) ? key[i - 1] : (S::less(x, key[i]) ? x : key[i]);
            }
        }
        key[0] = S::less(x, key[0]) ? x : key[0];
#pragma unroll
        for (int i = 0; i < KMAX; i++) {
            if (i == k - 1) {
                limit = key[i];
            }
        }
    }

    // key[i], or the no-key past KMAX (a select over the registers, which it leaves as they are).
    __device__ __forceinline__ typename S::Key at(int64_t i) const {
        typename S::Key k = S::none();
#pragma unroll
        for (int j = 0; j < KMAX; j++) {
            if (j == i) {
                k = key[j];
            }
        }
        return k;
    }
};

// The k smallest keys of a group's lists, ascending: sink(q, key) for q = 0 .. k-1, called by the one thread whose
// head the key was (by the group's first thread for the no-key: every list is empty), which then moves its head on.
// `group` is 32 (a warp: lanes only) or ML_BLOCK (the whole block, which must all call this; it leaves the shared
// heads free for the next call).
template <typename S, int KMAX, typename Sink>
__device__ __forceinline__ void ml_select_emit(MlTopK<S, KMAX>& list, int64_t k, int32_t group, const Sink& sink) {
    __shared__ unsigned long long heads[2][ML_WARPS * S::WORDS];
    int32_t lane = threadIdx.x & 31;
    int32_t warp = threadIdx.x >> 5;
    int32_t rank = threadIdx.x & (group - 1);
    int64_t taken = 0;
    typename S::Key head = list.key[0];
    for (int64_t q = 0; q < k; q++) {
        typename S::Key m = head;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            typename S::Key o = S::shuffleXor(m, offset);
            m = S::less(o, m) ? o : m;
        }
        if (group > 32) {
            // Two sets of heads: a warp writes round q + 1's while another may still read round q's; round q - 1's
            // were read by everyone before the barrier of round q.
            if (lane == 0) {
                S::save(heads[q & 1] + warp * S::WORDS, m);
            }
            __syncthreads();
            m = S::load(heads[q & 1]);
#pragma unroll
            for (int w = 1; w < ML_WARPS; w++) {
                typename S::Key o = S::load(heads[q & 1] + w * S::WORDS);
                m = S::less(o, m) ? o : m;
            }
        }
        bool empty = S::same(m, S::none());
        bool mine = !empty && S::same(head, m);
        if (mine || (empty && rank == 0)) {
            sink(q, m);
        }
        if (mine) {
            head = list.at(++taken);
        }
    }
    if (group > 32) {
        __syncthreads();
    }
}

// Writes a slice's keys to the scratch array (S::WORDS words a key).
template <typename S>
struct MlKeySink {
    unsigned long long* out;

    __device__ __forceinline__ void operator()(int64_t q, typename S::Key key) const {
        S::save(out + q * S::WORDS, key);
    }
};

// Writes a row's selection: the value (read again from the row, bit for bit) and the column plus idOffset.
template <typename T, typename S>
struct MlRowSink {
    const T* row;
    T* values;
    int64_t* ids;
    int64_t idOffset;

    __device__ __forceinline__ void operator()(int64_t q, typename S::Key key) const {
        if (!S::same(key, S::none())) {
            int64_t column = S::column(key);
            values[q] = row[column];
            ids[q] = column + idOffset;
        }
    }
};

// The k (<= KMAX) smallest of each row of values (rows x cols), by groups of `group` threads (32 or ML_BLOCK) per
// row, or with parts > 1 (group ML_BLOCK) of each of the `parts` slices of ceil(cols / parts) elements of each row
// into partial (rows x parts x k keys).
template <typename T, int KMAX>
__device__ void ml_select(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                          const T* __restrict__ values, T* __restrict__ outValues, int64_t* __restrict__ outIds,
                          unsigned long long* __restrict__ partial) {
    typedef MlSelect<T> S;
    // elements each thread loads before it looks at them: fewer where a longer list holds the registers
    const int unroll = KMAX <= 8 ? 8 : 4;
    int32_t groups = ML_BLOCK / group;
    int32_t rank = threadIdx.x & (group - 1);
    int64_t slice = (cols + parts - 1) / parts;
    int64_t items = rows * parts;
    // group-uniform: every thread of a group (the whole block when group is ML_BLOCK) runs the same iterations
    for (int64_t item = (int64_t) blockIdx.x * groups + threadIdx.x / group; item < items;
         item += (int64_t) gridDim.x * groups) {
        int64_t r = item / parts;
        int64_t begin = (item - r * parts) * slice;
        int64_t end = cols - begin < slice ? cols : begin + slice;
        const T* row = values + r * cols;
        MlTopK<S, KMAX> list;
        list.clear();
        for (int64_t j0 = begin + rank; j0 < end; j0 += (int64_t) group * unroll) {
            T v[unroll];
#pragma unroll
            for (int u = 0; u < unroll; u++) {
                int64_t j = j0 + (int64_t) u * group;
                v[u] = j < end ? row[j] : (T) 0;
            }
            // Most elements are above the limit: test them all first; the few others enter one at a time through
            // one copy of the insertion (keys rotated down, so that every index stays a constant).
            typename S::Key keys[unroll];
            uint32_t below = 0;
#pragma unroll
            for (int u = 0; u < unroll; u++) {
                int64_t j = j0 + (int64_t) u * group;
                keys[u] = S::make(v[u], j);
                if (j < end && S::less(keys[u], list.limit)) {
                    below |= 1u << u;
                }
            }
#pragma unroll 1
            for (; below != 0; below >>= 1) {
                if ((below & 1) != 0) {
                    list.offer(keys[0], k);
                }
#pragma unroll
                for (int u = 0; u < unroll - 1; u++) {
                    keys[u] = keys[u + 1];
                }
            }
        }
        if (parts == 1) {
            MlRowSink<T, S> sink = {row, outValues + r * k, outIds + r * k, idOffset};
            ml_select_emit(list, k, group, sink);
        } else {
            MlKeySink<S> sink = {partial + item * k * S::WORDS};
            ml_select_emit(list, k, group, sink);
        }
    }
}

// The second launch of a row cut into parts: each row's k smallest of its parts x k keys in partial, a block a row.
template <typename T, int KMAX>
__device__ void ml_select_merge(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                const T* __restrict__ values, const unsigned long long* __restrict__ partial,
                                T* __restrict__ outValues, int64_t* __restrict__ outIds) {
    typedef MlSelect<T> S;
    int64_t n = parts * k;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const unsigned long long* keys = partial + r * n * S::WORDS;
        MlTopK<S, KMAX> list;
        list.clear();
        for (int64_t i = threadIdx.x; i < n; i += ML_BLOCK) {
            list.offer(S::load(keys + i * S::WORDS), k);
        }
        MlRowSink<T, S> sink = {values + r * cols, outValues + r * k, outIds + r * k, idOffset};
        ml_select_emit(list, k, ML_BLOCK, sink);
    }
}

// k above the registers' reach (ml_select_radix_*), a block a row: a radix select over the row's selection keys, which
// are unique, so the k smallest are the keys up to the k-th. Passes over the row, 8 bits of the key at a time from the
// top, count the keys that share the digits found so far by their next digit (a histogram in shared memory); the
// digit in which the k-th key falls is the next found digit. A pass stops the search when every key of that digit is
// among the k (at the last digit, where keys differ, it always is): the k are then exactly the keys whose found
// digits are at most the ones found, i.e. the keys up to the found prefix with every lower bit set. The block gathers
// those k keys into shared memory, sorts them (bitonic) and writes them out in order. Digits every key has 0 in are
// not searched: the column bits above those of cols - 1 (and the empty top half of a float32 key's 64 bits). Few
// long rows are cut into `parts` slices as for ml_select_* (same scratch layout: a slice's k smallest keys, padded
// with the no-key), and ml_select_radix_merge_* selects each row's k smallest of its slices' keys the same way.
#define ML_RADIX_MAX_K 1024

// A radix key: the value's monotone bits, then the 32-bit column (float32 64 bits, float64 96 of an __int128). In
// scratch, as MlSelect's keys: float32 one word, float64 two (value, column); the no-key is every bit set.
template <typename T>
struct MlRadix;

template <>
struct MlRadix<float> {
    typedef unsigned long long Key;
    static const int BITS = 64;
    static const int WORDS = 1;

    static __device__ __forceinline__ Key make(float v, int64_t column) {
        return ((Key) ml_order_bits(v) << 32) | (uint32_t) column;
    }
    static __device__ __forceinline__ void save(unsigned long long* at, Key a) {
        at[0] = a;
    }
    static __device__ __forceinline__ Key load(const unsigned long long* at) {
        return at[0];
    }
};

template <>
struct MlRadix<double> {
    typedef unsigned __int128 Key;
    static const int BITS = 96;
    static const int WORDS = 2;

    static __device__ __forceinline__ Key make(double v, int64_t column) {
        return ((Key) ml_order_bits(v) << 32) | (uint32_t) column;
    }
    static __device__ __forceinline__ void save(unsigned long long* at, Key a) {
        at[0] = (unsigned long long) (a >> 32);
        at[1] = (uint32_t) a;
    }
    static __device__ __forceinline__ Key load(const unsigned long long* at) {
        return ((Key) at[0] << 32) | (uint32_t) at[1];
    }
};

// key >> shift, 0 when the shift is the key type's width or more.
template <typename Key>
__device__ __forceinline__ Key ml_radix_above(Key key, int shift) {
    return shift >= (int) (8 * sizeof(Key)) ? (Key) 0 : key >> shift;
}

// visit(key) for the key of each element in [begin, end) of a row that the thread reads (every ML_BLOCK-th), loading
// ML_ROW_UNROLL elements before it looks at them (a block a row leaves few loads in flight otherwise).
template <typename T>
struct MlRadixRowKeys {
    const T* row;
    int64_t begin;
    int64_t end;

    template <typename Visit>
    __device__ __forceinline__ void operator()(const Visit& visit) const {
        for (int64_t j0 = begin + threadIdx.x; j0 < end; j0 += (int64_t) ML_BLOCK * ML_ROW_UNROLL) {
            T v[ML_ROW_UNROLL];
#pragma unroll
            for (int u = 0; u < ML_ROW_UNROLL; u++) {
                int64_t j = j0 + (int64_t) u * ML_BLOCK;
                v[u] = j < end ? row[j] : (T) 0;
            }
#pragma unroll
            for (int u = 0; u < ML_ROW_UNROLL; u++) {
                int64_t j = j0 + (int64_t) u * ML_BLOCK;
                if (j < end) {
                    visit(MlRadix<T>::make(v[u], j));
                }
            }
        }
    }
};

// visit(key) for each key of a row's slices in the scratch array that the thread reads, the no-keys left out.
template <typename T>
struct MlRadixScratchKeys {
    const unsigned long long* keys;
    int64_t n;

    template <typename Visit>
    __device__ __forceinline__ void operator()(const Visit& visit) const {
        typedef MlRadix<T> R;
        for (int64_t i = threadIdx.x; i < n; i += ML_BLOCK) {
            typename R::Key key = R::load(keys + i * R::WORDS);
            if (key != ~(typename R::Key) 0) {
                visit(key);
            }
        }
    }
};

// Writes a row's selection from its keys, as MlRowSink.
template <typename T>
struct MlRadixRowSink {
    const T* row;
    T* values;
    int64_t* ids;
    int64_t idOffset;

    __device__ __forceinline__ void operator()(int64_t q, typename MlRadix<T>::Key key) const {
        int64_t column = (int64_t) (uint32_t) key;
        values[q] = row[column];
        ids[q] = column + idOffset;
    }
};

// Writes a slice's keys (the no-key past its end) to the scratch array.
template <typename T>
struct MlRadixKeySink {
    unsigned long long* out;

    __device__ __forceinline__ void operator()(int64_t q, typename MlRadix<T>::Key key) const {
        MlRadix<T>::save(out + q * MlRadix<T>::WORDS, key);
    }
};

// ml_radix_block's shared memory, one per key type (not one per caller).
template <typename T>
struct MlRadixShared {
    uint32_t histogram[256];
    uint32_t warpSums[ML_WARPS];
    typename MlRadix<T>::Key sorted[ML_RADIX_MAX_K];
    uint32_t found[3];
};

template <typename T>
__device__ __forceinline__ MlRadixShared<T>& ml_radix_shared() {
    __shared__ MlRadixShared<T> shared;
    return shared;
}

// The block's `take` (<= k) smallest of the unique keys that keys(visit) visits (at least `take` of them, columns
// below cols), ascending, then no-keys up to k: sink(q, key) for q = 0 .. k-1. The whole block calls it.
template <typename T, typename Keys, typename Sink>
__device__ void ml_radix_block(int64_t cols, int64_t k, int64_t take, const Keys& keys, const Sink& sink) {
    typedef MlRadix<T> R;
    typedef typename R::Key Key;
    MlRadixShared<T>& shared = ml_radix_shared<T>();
    uint32_t* histogram = shared.histogram;
    uint32_t* warpSums = shared.warpSums;
    Key* sorted = shared.sorted;
    uint32_t* found = shared.found;
    int32_t lane = threadIdx.x & 31;
    int32_t warp = threadIdx.x >> 5;
    // the column digits below the top: bits of cols - 1, in whole digits (the first pass's digit is the top one)
    int32_t columnBits = cols <= 1 ? 0 : 64 - __clzll((long long) (cols - 1));
    int32_t columnDigits = (columnBits + 7) / 8;
    int32_t valueDigits = (R::BITS - 32) / 8;
    int32_t n = 1;
    while (n < k) {
        n <<= 1;
    }
    Key prefix = 0;
    // the keys still sought among those of the found digits, and the shift below the last found digit
    uint32_t need = (uint32_t) take;
    int32_t shift = R::BITS;
    for (int32_t d = 0; take > 0 && d < valueDigits + columnDigits; d++) {
        int32_t next = d < valueDigits ? R::BITS - 8 * (d + 1) : 8 * (valueDigits + columnDigits - d - 1);
        histogram[threadIdx.x] = 0;
        __syncthreads();
        Key known = ml_radix_above(prefix, next + 8);
        keys([&](Key key) {
            if (ml_radix_above(key, next + 8) == known) {
                atomicAdd(&histogram[(uint32_t) (key >> next) & 0xffu], 1u);
            }
        });
        __syncthreads();
        // an inclusive scan of the histogram, a bin a thread: within the warp, then over the warps before
        uint32_t count = histogram[threadIdx.x];
        uint32_t sum = count;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            uint32_t o = __shfl_up_sync(0xffffffffu, sum, offset);
            sum += lane >= offset ? o : 0;
        }
        if (lane == 31) {
            warpSums[warp] = sum;
        }
        __syncthreads();
        for (int w = 0; w < warp; w++) {
            sum += warpSums[w];
        }
        if (sum - count < need && need <= sum) {
            found[0] = threadIdx.x;
            found[1] = need - (sum - count);
            found[2] = count == need - (sum - count) ? 1 : 0;
        }
        __syncthreads();
        prefix |= (Key) found[0] << next;
        need = found[1];
        shift = next;
        bool whole = found[2] != 0;
        __syncthreads();
        if (whole) {
            break;
        }
    }
    Key limit = prefix | (shift == 0 ? (Key) 0 : (((Key) 1 << shift) - 1));
    // gather the keys up to the limit; pad to a power of two with the no-key, above every key
    for (int32_t i = threadIdx.x; i < n; i += ML_BLOCK) {
        sorted[i] = ~(Key) 0;
    }
    if (threadIdx.x == 0) {
        found[0] = 0;
    }
    __syncthreads();
    if (take > 0) {
        keys([&](Key key) {
            if (key <= limit) {
                uint32_t slot = atomicAdd(&found[0], 1u);
                if (slot < (uint32_t) n) {
                    sorted[slot] = key;
                }
            }
        });
    }
    __syncthreads();
    for (int32_t size = 2; size <= n; size <<= 1) {
        for (int32_t stride = size >> 1; stride > 0; stride >>= 1) {
            for (int32_t i = threadIdx.x; i < n; i += ML_BLOCK) {
                int32_t j = i ^ stride;
                if (j > i) {
                    Key a = sorted[i];
                    Key b = sorted[j];
                    if ((a > b) == ((i & size) == 0)) {
                        sorted[i] = b;
                        sorted[j] = a;
                    }
                }
            }
            __syncthreads();
        }
    }
    for (int32_t q = threadIdx.x; q < k; q += ML_BLOCK) {
        sink(q, sorted[q]);
    }
    __syncthreads();
}

// The k (<= ML_RADIX_MAX_K, cols < 2^31) smallest of each row of values (rows x cols), a block a row, or with
// parts > 1 of each of the `parts` slices of ceil(cols / parts) elements of each row into partial (rows x parts x k
// keys), a block a slice.
template <typename T>
__device__ void ml_select_radix(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                const T* __restrict__ values, T* __restrict__ outValues,
                                int64_t* __restrict__ outIds, unsigned long long* __restrict__ partial) {
    int64_t slice = (cols + parts - 1) / parts;
    for (int64_t item = blockIdx.x; item < rows * parts; item += gridDim.x) {
        int64_t r = item / parts;
        int64_t begin = (item - r * parts) * slice;
        int64_t end = cols - begin < slice ? cols : begin + slice;
        const T* row = values + r * cols;
        MlRadixRowKeys<T> keys = {row, begin, end};
        if (parts == 1) {
            MlRadixRowSink<T> sink = {row, outValues + r * k, outIds + r * k, idOffset};
            ml_radix_block<T>(cols, k, k, keys, sink);
        } else {
            int64_t size = end > begin ? end - begin : 0;
            MlRadixKeySink<T> sink = {partial + item * k * MlRadix<T>::WORDS};
            ml_radix_block<T>(cols, k, size < k ? size : k, keys, sink);
        }
    }
}

// The second launch of a row cut into parts: each row's k smallest of its parts x k keys in partial, a block a row.
template <typename T>
__device__ void ml_select_radix_merge(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                      const T* __restrict__ values, const unsigned long long* __restrict__ partial,
                                      T* __restrict__ outValues, int64_t* __restrict__ outIds) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        MlRadixScratchKeys<T> keys = {partial + r * parts * k * MlRadix<T>::WORDS, parts * k};
        MlRadixRowSink<T> sink = {values + r * cols, outValues + r * k, outIds + r * k, idOffset};
        ml_radix_block<T>(cols, k, k, keys, sink);
    }
}

// One thread per row: the k smallest of two ascending lists, a first on equal distances.
template <typename T, typename I>
__device__ void ml_merge_neighbors(int64_t rows, int64_t ka, int64_t kb, int64_t k, const T* da, const I* ia,
                                   const T* db, const I* ib, T* od, I* oi) {
    GRID_STRIDE_LOOP(r, rows) {
        const T* ra = da + r * ka;
        const I* rai = ia + r * ka;
        const T* rb = db + r * kb;
        const I* rbi = ib + r * kb;
        T* ro = od + r * k;
        I* roi = oi + r * k;
        int64_t a = 0;
        int64_t b = 0;
        for (int64_t q = 0; q < k; q++) {
            bool takeA = b >= kb || (a < ka && ml_compare((double) ra[a], (double) rb[b]) <= 0);
            if (takeA) {
                ro[q] = ra[a];
                roi[q] = rai[a];
                a++;
            } else {
                ro[q] = rb[b];
                roi[q] = rbi[b];
                b++;
            }
        }
    }
}

// One thread per row walks every tree of a cuwire.forest/1 blob (see io.cuwire.ml.ForestLayout): 48-byte header,
// (trees + 1) x {int64 first node, int64 first leaf}, nodes of 16 bytes {int32 feature, int32 child, float64
// threshold}, leaves x outputs float64 values. The outputs are summed in double, ML_FOREST_CHUNK at a time (one
// walk per tree and chunk), then scaled by 1 / trees. A walk that leaves its tree reports the row.
template <typename T>
__device__ void ml_predict_forest(int64_t rows, int32_t trees, int32_t features, int32_t outputs, int64_t nodes,
                                  int64_t leaves, const unsigned char* blob, const T* x, T* out,
                                  unsigned long long* error) {
    const int64_t* table = (const int64_t*) (blob + 48);
    const unsigned char* nodeBase = blob + 48 + 16 * ((int64_t) trees + 1);
    const double* values = (const double*) (nodeBase + 16 * nodes);
    double inv = trees == 0 ? 0.0 : 1.0 / trees;
    GRID_STRIDE_LOOP(r, rows) {
        const T* xr = x + r * features;
        T* o = out + r * outputs;
        bool bad = false;
        for (int32_t c0 = 0; c0 < outputs && !bad; c0 += ML_FOREST_CHUNK) {
            int32_t width = outputs - c0 < ML_FOREST_CHUNK ? outputs - c0 : ML_FOREST_CHUNK;
            double acc[ML_FOREST_CHUNK];
#pragma unroll
            for (int c = 0; c < ML_FOREST_CHUNK; c++) {
                acc[c] = 0;
            }
            for (int32_t t = 0; t < trees && !bad; t++) {
                int64_t first = table[2 * t];
                int64_t firstLeaf = table[2 * t + 1];
                int64_t size = table[2 * t + 2] - first;
                if (first < 0 || size <= 0 || first > nodes - size) {
                    bad = true;
                    break;
                }
                const unsigned char* tree = nodeBase + 16 * first;
                int64_t at = 0;
                int64_t steps = 0;
                int32_t feature = *(const int32_t*) tree;
                while (feature >= 0) {
                    int32_t child = *(const int32_t*) (tree + 16 * at + 4);
                    double threshold = *(const double*) (tree + 16 * at + 8);
                    if (feature >= features || child < 0 || child >= size - 1 || ++steps > size) {
                        bad = true;
                        break;
                    }
                    at = (double) xr[feature] <= threshold ? child : child + 1;
                    feature = *(const int32_t*) (tree + 16 * at);
                }
                if (bad) {
                    break;
                }
                int64_t leaf = firstLeaf + *(const int32_t*) (tree + 16 * at + 4);
                if (leaf < 0 || leaf >= leaves) {
                    bad = true;
                    break;
                }
                const double* v = values + leaf * outputs + c0;
                for (int c = 0; c < width; c++) {
                    acc[c] += v[c];
                }
            }
            for (int c = 0; c < width; c++) {
                o[c0 + c] = (T) (acc[c] * inv);
            }
        }
        if (bad) {
            ml_report(error, r);
        }
    }
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------- fill (float fills are fill_f32 / fill_f64)

__global__ void ml_fill_i32(int64_t n, int32_t value, int32_t* y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = value;
    }
}

__global__ void ml_fill_i64(int64_t n, int64_t value, int64_t* y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = value;
    }
}

// ---------------------------------------------------------------- element-wise

__global__ void ml_map_f32(int64_t n, int32_t op, const float* in, float* out) {
    ml_map(n, op, in, out);
}

__global__ void ml_map_f64(int64_t n, int32_t op, const double* in, double* out) {
    ml_map(n, op, in, out);
}

__global__ void ml_broadcast_rows_f32(int64_t n, int64_t cols, int32_t op, float* a, const float* v) {
    ml_broadcast_rows(n, cols, op, a, v);
}

__global__ void ml_broadcast_rows_f64(int64_t n, int64_t cols, int32_t op, double* a, const double* v) {
    ml_broadcast_rows(n, cols, op, a, v);
}

__global__ void ml_softmax_rows_f32(int64_t rows, int64_t cols, const float* in, float* out) {
    ml_softmax_rows(rows, cols, in, out);
}

__global__ void ml_softmax_rows_f64(int64_t rows, int64_t cols, const double* in, double* out) {
    ml_softmax_rows(rows, cols, in, out);
}

// ---------------------------------------------------------------- reductions: partial[blockIdx.x] per block

__global__ void ml_reduce_f32(int64_t n, int32_t op, const float* a, double* partial) {
    ml_reduce(n, op, a, partial);
}

__global__ void ml_reduce_f64(int64_t n, int32_t op, const double* a, double* partial) {
    ml_reduce(n, op, a, partial);
}

__global__ void ml_reduce_i32(int64_t n, int32_t op, const int32_t* a, double* partial) {
    ml_reduce(n, op, a, partial);
}

__global__ void ml_reduce_i64(int64_t n, int32_t op, const int64_t* a, double* partial) {
    ml_reduce(n, op, a, partial);
}

__global__ void ml_dot_f32(int64_t n, const float* x, const float* y, double* partial) {
    ml_dot(n, x, y, partial);
}

__global__ void ml_dot_f64(int64_t n, const double* x, const double* y, double* partial) {
    ml_dot(n, x, y, partial);
}

__global__ void ml_count_equal_i32(int64_t n, const int32_t* a, const int32_t* b, double* partial) {
    ml_count_equal(n, a, b, partial);
}

__global__ void ml_count_equal_i64(int64_t n, const int64_t* a, const int64_t* b, double* partial) {
    ml_count_equal(n, a, b, partial);
}

__global__ void ml_arg_rows_f32(int64_t rows, int64_t cols, int32_t largest, const float* a, int32_t* index,
                                float* best) {
    ml_arg_rows(rows, cols, largest, a, index, best);
}

__global__ void ml_arg_rows_f64(int64_t rows, int64_t cols, int32_t largest, const double* a, int32_t* index,
                                double* best) {
    ml_arg_rows(rows, cols, largest, a, index, best);
}

// ---------------------------------------------------------------- fused

__global__ void ml_cross_entropy_f32(int64_t rows, int64_t cols, const float* z, const int32_t* labels,
                                     float* grad, double* rowLoss, unsigned long long* error) {
    ml_cross_entropy(rows, cols, z, labels, grad, rowLoss, error);
}

__global__ void ml_cross_entropy_f64(int64_t rows, int64_t cols, const double* z, const int32_t* labels,
                                     double* grad, double* rowLoss, unsigned long long* error) {
    ml_cross_entropy(rows, cols, z, labels, grad, rowLoss, error);
}

__global__ void ml_row_sq_norms_f32(int64_t rows, int64_t cols, const float* x, float* norms) {
    ml_row_sq_norms(rows, cols, x, norms);
}

__global__ void ml_row_sq_norms_f64(int64_t rows, int64_t cols, const double* x, double* norms) {
    ml_row_sq_norms(rows, cols, x, norms);
}

__global__ void ml_add_norms_clamp_f32(int64_t n, int64_t m, float* out, const float* xn, const float* yn) {
    ml_add_norms_clamp(n, m, out, xn, yn);
}

__global__ void ml_add_norms_clamp_f64(int64_t n, int64_t m, double* out, const double* xn, const double* yn) {
    ml_add_norms_clamp(n, m, out, xn, yn);
}

// ---------------------------------------------------------------- row groups (launched with rows x lanes threads)

__global__ void ml_gemv_rows_f32(int64_t rows, int64_t cols, int32_t lanes, double alpha, const float* a,
                                 const float* x, double beta, float* y) {
    ml_gemv_rows(rows, cols, lanes, alpha, a, x, beta, y);
}

__global__ void ml_gemv_rows_f64(int64_t rows, int64_t cols, int32_t lanes, double alpha, const double* a,
                                 const double* x, double beta, double* y) {
    ml_gemv_rows(rows, cols, lanes, alpha, a, x, beta, y);
}

__global__ void ml_nearest_rows_k8_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                       const float* c, int32_t* index, float* best) {
    ml_nearest_rows<8>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_k8_f64(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const double* x,
                                       const double* c, int32_t* index, double* best) {
    ml_nearest_rows<8>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_k32_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                        const float* c, int32_t* index, float* best) {
    ml_nearest_rows<32>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_k32_f64(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const double* x,
                                        const double* c, int32_t* index, double* best) {
    ml_nearest_rows<32>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_v4_k8_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                          const float* c, int32_t* index, float* best) {
    ml_nearest_rows_v4<8>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_v4_k32_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                           const float* c, int32_t* index, float* best) {
    ml_nearest_rows_v4<32>(rows, cols, k, lanes, x, c, index, best);
}

// The registers kernels: 64 center floats and two rows' elements a thread; at most 128 registers, two blocks an SM.
__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_nearest_rows_regs_v4_k8x1_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                                 const float* c, int32_t* index, float* best) {
    ml_nearest_rows_regs<8, 1, true>(rows, cols, k, lanes, x, c, index, best);
}

__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_nearest_rows_regs_k8x1_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                              const float* c, int32_t* index, float* best) {
    ml_nearest_rows_regs<8, 1, false>(rows, cols, k, lanes, x, c, index, best);
}

__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_nearest_rows_regs_v4_k4x2_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                                 const float* c, int32_t* index, float* best) {
    ml_nearest_rows_regs<4, 2, true>(rows, cols, k, lanes, x, c, index, best);
}

__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_nearest_rows_regs_k4x2_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                              const float* c, int32_t* index, float* best) {
    ml_nearest_rows_regs<4, 2, false>(rows, cols, k, lanes, x, c, index, best);
}

// ---------------------------------------------------------------- indexing

__global__ void ml_gather_rows_w8(int64_t count, int64_t words, int64_t srcRows, const void* index, int32_t index64,
                                  const uint64_t* src, uint64_t* out, unsigned long long* error) {
    ml_gather_rows(count, words, srcRows, index, index64, src, out, error);
}

__global__ void ml_gather_rows_w4(int64_t count, int64_t words, int64_t srcRows, const void* index, int32_t index64,
                                  const uint32_t* src, uint32_t* out, unsigned long long* error) {
    ml_gather_rows(count, words, srcRows, index, index64, src, out, error);
}

__global__ void ml_gather_rows_w1(int64_t count, int64_t words, int64_t srcRows, const void* index, int32_t index64,
                                  const uint8_t* src, uint8_t* out, unsigned long long* error) {
    ml_gather_rows(count, words, srcRows, index, index64, src, out, error);
}

__global__ void ml_scatter_add_rows_f32(int64_t n, int64_t cols, int64_t k, const float* src, const int32_t* index,
                                       float* out, unsigned long long* error) {
    ml_scatter_add_rows(n, cols, k, src, index, out, error);
}

__global__ void ml_scatter_add_rows_f64(int64_t n, int64_t cols, int64_t k, const double* src,
                                       const int32_t* index, double* out, unsigned long long* error) {
    ml_scatter_add_rows(n, cols, k, src, index, out, error);
}

__global__ void ml_bincount_f32(int64_t n, int64_t k, const int32_t* index, float* out, unsigned long long* error) {
    ml_bincount(n, k, index, out, error);
}

__global__ void ml_bincount_f64(int64_t n, int64_t k, const int32_t* index, double* out,
                                unsigned long long* error) {
    ml_bincount(n, k, index, out, error);
}

__global__ void ml_scatter_sums_f32(int64_t n, int64_t cols, int64_t k, int64_t parts, int64_t rowsPerPart,
                                    int32_t lanes, const float* src, const int32_t* index, double* partial,
                                    unsigned long long* error) {
    ml_scatter_sums(n, cols, k, parts, rowsPerPart, lanes, src, index, partial, error);
}

__global__ void ml_scatter_sums_f64(int64_t n, int64_t cols, int64_t k, int64_t parts, int64_t rowsPerPart,
                                    int32_t lanes, const double* src, const int32_t* index, double* partial,
                                    unsigned long long* error) {
    ml_scatter_sums(n, cols, k, parts, rowsPerPart, lanes, src, index, partial, error);
}

__global__ void ml_scatter_finish_f32(int64_t parts, int64_t elements, const double* partial, float* out) {
    ml_scatter_finish(parts, elements, partial, out);
}

__global__ void ml_scatter_finish_f64(int64_t parts, int64_t elements, const double* partial, double* out) {
    ml_scatter_finish(parts, elements, partial, out);
}

__global__ void ml_bincount_blocks_f32(int64_t n, int64_t k, const int32_t* index, float* out,
                                       unsigned long long* error) {
    ml_bincount_blocks(n, k, index, out, error);
}

__global__ void ml_bincount_blocks_f64(int64_t n, int64_t k, const int32_t* index, double* out,
                                       unsigned long long* error) {
    ml_bincount_blocks(n, k, index, out, error);
}

__global__ void ml_count_rows_f32(int64_t rows, int64_t k, int64_t classes, const int32_t* labels, float* out,
                                  unsigned long long* error) {
    ml_count_rows(rows, k, classes, labels, out, error);
}

__global__ void ml_count_rows_f64(int64_t rows, int64_t k, int64_t classes, const int32_t* labels, double* out,
                                  unsigned long long* error) {
    ml_count_rows(rows, k, classes, labels, out, error);
}

// ---------------------------------------------------------------- neighbors

__global__ void ml_smallest_k_f32(int64_t rows, int64_t cols, int64_t k, int64_t idOffset, const float* values,
                                  float* outValues, int64_t* outIds) {
    ml_smallest_k(rows, cols, k, idOffset, values, outValues, outIds);
}

__global__ void ml_smallest_k_f64(int64_t rows, int64_t cols, int64_t k, int64_t idOffset, const double* values,
                                  double* outValues, int64_t* outIds) {
    ml_smallest_k(rows, cols, k, idOffset, values, outValues, outIds);
}

__global__ void ml_select_k8_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                                 const float* values, float* outValues, int64_t* outIds, void* partial) {
    ml_select<float, 8>(rows, cols, k, parts, group, idOffset, values, outValues, outIds,
                        (unsigned long long*) partial);
}

__global__ void ml_select_merge_k8_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                       const float* values, const void* partial, float* outValues,
                                       int64_t* outIds) {
    ml_select_merge<float, 8>(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial,
                              outValues, outIds);
}

__global__ void ml_select_k8_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                                 const double* values, double* outValues, int64_t* outIds, void* partial) {
    ml_select<double, 8>(rows, cols, k, parts, group, idOffset, values, outValues, outIds,
                         (unsigned long long*) partial);
}

__global__ void ml_select_merge_k8_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                       const double* values, const void* partial, double* outValues,
                                       int64_t* outIds) {
    ml_select_merge<double, 8>(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial,
                               outValues, outIds);
}

__global__ void ml_select_k32_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                                  const float* values, float* outValues, int64_t* outIds, void* partial) {
    ml_select<float, 32>(rows, cols, k, parts, group, idOffset, values, outValues, outIds,
                         (unsigned long long*) partial);
}

__global__ void ml_select_merge_k32_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                        const float* values, const void* partial, float* outValues,
                                        int64_t* outIds) {
    ml_select_merge<float, 32>(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial,
                               outValues, outIds);
}

// Two blocks a multiprocessor: 32 keys of 3 words and 4 elements in flight would take ~140 registers (one block
// of 256); capped at 128, ptxas spills a few words (40 bytes) of the rare insertion path.
__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_select_k32_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                                  const double* values, double* outValues, int64_t* outIds, void* partial) {
    ml_select<double, 32>(rows, cols, k, parts, group, idOffset, values, outValues, outIds,
                          (unsigned long long*) partial);
}

__global__ void ml_select_merge_k32_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                        const double* values, const void* partial, double* outValues,
                                        int64_t* outIds) {
    ml_select_merge<double, 32>(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial,
                                outValues, outIds);
}

__global__ void ml_select_radix_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                    const float* values, float* outValues, int64_t* outIds, void* partial) {
    ml_select_radix(rows, cols, k, parts, idOffset, values, outValues, outIds, (unsigned long long*) partial);
}

__global__ void ml_select_radix_merge_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                          const float* values, const void* partial, float* outValues,
                                          int64_t* outIds) {
    ml_select_radix_merge(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial, outValues,
                          outIds);
}

__global__ void ml_select_radix_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                    const double* values, double* outValues, int64_t* outIds, void* partial) {
    ml_select_radix(rows, cols, k, parts, idOffset, values, outValues, outIds, (unsigned long long*) partial);
}

__global__ void ml_select_radix_merge_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                          const double* values, const void* partial, double* outValues,
                                          int64_t* outIds) {
    ml_select_radix_merge(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial, outValues,
                          outIds);
}

__global__ void ml_merge_neighbors_f32_i32(int64_t rows, int64_t ka, int64_t kb, int64_t k, const float* da,
                                           const int32_t* ia, const float* db, const int32_t* ib, float* od,
                                           int32_t* oi) {
    ml_merge_neighbors(rows, ka, kb, k, da, ia, db, ib, od, oi);
}

__global__ void ml_merge_neighbors_f32_i64(int64_t rows, int64_t ka, int64_t kb, int64_t k, const float* da,
                                           const int64_t* ia, const float* db, const int64_t* ib, float* od,
                                           int64_t* oi) {
    ml_merge_neighbors(rows, ka, kb, k, da, ia, db, ib, od, oi);
}

__global__ void ml_merge_neighbors_f64_i32(int64_t rows, int64_t ka, int64_t kb, int64_t k, const double* da,
                                           const int32_t* ia, const double* db, const int32_t* ib, double* od,
                                           int32_t* oi) {
    ml_merge_neighbors(rows, ka, kb, k, da, ia, db, ib, od, oi);
}

__global__ void ml_merge_neighbors_f64_i64(int64_t rows, int64_t ka, int64_t kb, int64_t k, const double* da,
                                           const int64_t* ia, const double* db, const int64_t* ib, double* od,
                                           int64_t* oi) {
    ml_merge_neighbors(rows, ka, kb, k, da, ia, db, ib, od, oi);
}

// ---------------------------------------------------------------- forests

__global__ void ml_predict_forest_f32(int64_t rows, int32_t trees, int32_t features, int32_t outputs, int64_t nodes,
                                      int64_t leaves, const unsigned char* blob, const float* x, float* out,
                                      unsigned long long* error) {
    ml_predict_forest(rows, trees, features, outputs, nodes, leaves, blob, x, out, error);
}

__global__ void ml_predict_forest_f64(int64_t rows, int32_t trees, int32_t features, int32_t outputs, int64_t nodes,
                                      int64_t leaves, const unsigned char* blob, const double* x, double* out,
                                      unsigned long long* error) {
    ml_predict_forest(rows, trees, features, outputs, nodes, leaves, blob, x, out, error);
}

}  // extern "C"
