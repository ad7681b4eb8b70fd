// The implementation of ml/knn.cuh.
#pragma once

#include "../common.cuh"
#include "select.cuh"

// Queries a block of ml_knn_fused holds (io.cuwire.ml.cuda.internal.MlKernels.KNN_QUERIES) and rows of x a tile
// holds; a block's 256 threads are 8 warps, warp w taking queries 4w .. 4w + 3 and lane l rows l, l + 32, l + 64 and
// l + 96 of each tile: 4 x 4 distances a thread.
#define ML_KNN_QUERIES 32
#define ML_KNN_ROWS 128

namespace {

// The tile by element type: the columns of the queries and rows a tile holds in shared memory at once, and the
// candidates a query may queue between two flushes into its list.
template <typename T>
struct MlKnnTile;

template <>
struct MlKnnTile<float> {
    static const int DIMS = 16;
    static const int QUEUE = 32;
};

template <>
struct MlKnnTile<double> {
    static const int DIMS = 8;
    static const int QUEUE = 16;
};

// What a block of ml_knn_fused keeps in shared memory: the tile's columns of its queries and rows (a row of the
// arrays per column; one element of padding, so that storing a row's consecutive columns hits distinct banks), and
// per query its list of the best keys so far (ascending, `filled` of them), its limit (the k-th key once the list is
// full, else the no-key) and its queue of candidates.
template <typename T, int KMAX>
struct MlKnnShared {
    T q[MlKnnTile<T>::DIMS][ML_KNN_QUERIES + 1];
    T x[MlKnnTile<T>::DIMS][ML_KNN_ROWS + 1];
    unsigned long long list[ML_KNN_QUERIES][KMAX * MlSelect<T>::WORDS];
    unsigned long long queue[ML_KNN_QUERIES][MlKnnTile<T>::QUEUE * MlSelect<T>::WORDS];
    unsigned long long limit[ML_KNN_QUERIES][MlSelect<T>::WORDS];
    int count[ML_KNN_QUERIES];
    int filled[ML_KNN_QUERIES];
};

// Query `qi`'s queue into its list, by one thread: each queued key enters by insertion (the k-th falls out once the
// list is full), then the queue is empty and the limit is the list's k-th key, if it has k.
template <typename T, int KMAX>
__device__ __forceinline__ void ml_knn_flush(MlKnnShared<T, KMAX>& sh, int qi, int64_t k) {
    typedef MlSelect<T> S;
    const int words = S::WORDS;
    int queued = min(sh.count[qi], MlKnnTile<T>::QUEUE);
    if (queued == 0) {
        return;
    }
    unsigned long long* list = sh.list[qi];
    int filled = sh.filled[qi];
    for (int c = 0; c < queued; c++) {
        typename S::Key key = S::load(sh.queue[qi] + c * words);
        if (filled == k && !S::less(key, S::load(list + (k - 1) * words))) {
            continue;
        }
        int p = filled < k ? filled++ : (int) k - 1;
        while (p > 0 && S::less(key, S::load(list + (p - 1) * words))) {
            S::save(list + p * words, S::load(list + (p - 1) * words));
            p--;
        }
        S::save(list + p * words, key);
    }
    sh.filled[qi] = filled;
    sh.count[qi] = 0;
    S::save(sh.limit[qi], filled == k ? S::load(list + (k - 1) * words) : S::none());
}

// For each of the m queries q (m x d), the k (<= KMAX) rows of x (n x d) nearest in squared Euclidean distance, the
// distances and the queries' selection in one pass through shared memory: no distance leaves the block. A block
// takes ML_KNN_QUERIES queries and the rows of one of `parts` slices of ceil(n / parts) rows (items: the query blocks
// of slice 0, then those of slice 1, ..., so that the blocks running together read the same rows, from L2). It walks
// its slice a tile of ML_KNN_ROWS rows at a time, and each tile DIMS columns at a time through shared memory; each
// thread adds up its 4 x 4 distances, the column differences squared by fused multiply-adds in column order (the CPU
// backend's order: in double for float64 the same bits as its kNearestRows; float32 in float, whose ranking
// ml_exact_neighbors then corrects). A tile's distances become selection keys (MlSelect: (distance, row), unique),
// and a key below its query's limit is queued (a shared-memory atomic counter); after each tile one thread per query
// flushes the queue into the query's list (ml_knn_flush), and keys that found the queue full try again against the
// new limit, until none is left. Rows enter in any order, but the keys are unique, so a list is exactly its slice's k
// smallest. With one part the list is written out (distance from the key, row + idOffset); else its keys go to
// partial (query-major: m x parts x k keys, the no-key past a slice's rows), for ml_knn_merge.
template <typename T, int KMAX>
__device__ void ml_knn_fused(int64_t m, int64_t n, int64_t d, int64_t k, int64_t parts, int64_t idOffset,
                             const T* __restrict__ q, const T* __restrict__ x, T* __restrict__ dist,
                             int64_t* __restrict__ ids, unsigned long long* __restrict__ partial) {
    typedef MlSelect<T> S;
    typedef typename S::Key Key;
    const int dims = MlKnnTile<T>::DIMS;
    const int words = S::WORDS;
    __shared__ MlKnnShared<T, KMAX> sh;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int64_t queryBlocks = (m + ML_KNN_QUERIES - 1) / ML_KNN_QUERIES;
    const int64_t slice = (n + parts - 1) / parts;
    for (int64_t item = blockIdx.x; item < queryBlocks * parts; item += gridDim.x) {
        const int64_t q0 = (item % queryBlocks) * ML_KNN_QUERIES;
        const int64_t part = item / queryBlocks;
        const int64_t begin = part * slice;
        const int64_t end = n - begin < slice ? n : begin + slice;
        if (tid < ML_KNN_QUERIES) {
            sh.count[tid] = 0;
            sh.filled[tid] = 0;
            S::save(sh.limit[tid], S::none());
        }
        __syncthreads();
        for (int64_t t0 = begin; t0 < end; t0 += ML_KNN_ROWS) {
            T acc[4][4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    acc[i][j] = 0;
                }
            }
            for (int64_t p0 = 0; p0 < d; p0 += dims) {
                // the columns p0 .. p0 + width - 1: consecutive threads load consecutive columns of a row
                const int width = (int) (d - p0 < dims ? d - p0 : dims);
                __syncthreads();  // the last tile's reads are done
                for (int i = tid; i < ML_KNN_QUERIES * width; i += ML_BLOCK) {
                    int qi = i / width;
                    int p = i - qi * width;
                    int64_t row = q0 + qi;
                    sh.q[p][qi] = row < m ? q[row * d + p0 + p] : (T) 0;
                }
                for (int i = tid; i < ML_KNN_ROWS * width; i += ML_BLOCK) {
                    int ri = i / width;
                    int p = i - ri * width;
                    int64_t row = t0 + ri;
                    sh.x[p][ri] = row < end ? x[row * d + p0 + p] : (T) 0;
                }
                __syncthreads();
#pragma unroll
                for (int p = 0; p < dims; p++) {
                    if (p < width) {
                        T a[4];
                        T b[4];
#pragma unroll
                        for (int i = 0; i < 4; i++) {
                            a[i] = sh.q[p][warp * 4 + i];
                            b[i] = sh.x[p][lane + 32 * i];
                        }
#pragma unroll
                        for (int i = 0; i < 4; i++) {
#pragma unroll
                            for (int j = 0; j < 4; j++) {
                                T e = a[i] - b[j];
                                acc[i][j] = fma(e, e, acc[i][j]);
                            }
                        }
                    }
                }
            }
            // The tile's candidates: pending bit 4 i + j for query 4 warp + i and row t0 + lane + 32 j.
            unsigned int pending = 0;
#pragma unroll
            for (int i = 0; i < 4; i++) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    if (q0 + warp * 4 + i < m && t0 + lane + 32 * j < end) {
                        pending |= 1u << (i * 4 + j);
                    }
                }
            }
            while (true) {
#pragma unroll
                for (int b = 0; b < 16; b++) {
                    if ((pending & (1u << b)) != 0) {
                        int qi = warp * 4 + b / 4;
                        Key key = S::make(acc[b / 4][b % 4], t0 + lane + 32 * (b % 4));
                        if (!S::less(key, S::load(sh.limit[qi]))) {
                            pending &= ~(1u << b);
                        } else {
                            int slot = atomicAdd(&sh.count[qi], 1);
                            if (slot < MlKnnTile<T>::QUEUE) {
                                S::save(sh.queue[qi] + slot * words, key);
                                pending &= ~(1u << b);
                            }
                        }
                    }
                }
                bool again = __syncthreads_or(pending != 0) != 0;
                if (tid < ML_KNN_QUERIES) {
                    ml_knn_flush(sh, tid, k);
                }
                __syncthreads();
                if (!again) {
                    break;
                }
            }
        }
        for (int64_t i = tid; i < ML_KNN_QUERIES * k; i += ML_BLOCK) {
            int qi = (int) (i / k);
            int64_t c = i - qi * k;
            int64_t row = q0 + qi;
            if (row < m) {
                Key key = c < sh.filled[qi] ? S::load(sh.list[qi] + c * words) : S::none();
                if (parts == 1) {
                    if (!S::same(key, S::none())) {
                        dist[row * k + c] = S::value(key);
                        ids[row * k + c] = S::column(key) + idOffset;
                    }
                } else {
                    S::save(partial + ((row * parts + part) * k + c) * words, key);
                }
            }
        }
        __syncthreads();  // the lists are read before the next item resets them
    }
}

// Writes a query's merged selection: the distance from the key, the row plus idOffset.
template <typename T, typename S>
struct MlKnnSink {
    T* dist;
    int64_t* ids;
    int64_t idOffset;

    __device__ __forceinline__ void operator()(int64_t c, typename S::Key key) const {
        if (!S::same(key, S::none())) {
            dist[c] = S::value(key);
            ids[c] = S::column(key) + idOffset;
        }
    }
};

// The second launch of ml_knn_fused with parts > 1: each query's k smallest of its parts x k keys, a block a query.
template <typename T, int KMAX>
__device__ void ml_knn_merge(int64_t m, int64_t k, int64_t parts, int64_t idOffset,
                             const unsigned long long* __restrict__ partial, T* __restrict__ dist,
                             int64_t* __restrict__ ids) {
    typedef MlSelect<T> S;
    for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
        MlKnnSink<T, S> sink = {dist + r * k, ids + r * k, idOffset};
        ml_select_keys<S, KMAX>(partial + r * parts * k * S::WORDS, parts * k, k, sink);
    }
}

}  // namespace
