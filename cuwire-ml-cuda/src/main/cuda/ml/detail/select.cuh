// The implementation of ml/select.cuh.
#pragma once

#include "../common.cuh"

namespace {

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

// The value whose ml_order_bits are `bits` (any NaN's bits give the canonical NaN).
__device__ __forceinline__ float ml_order_value(uint32_t bits) {
    if (bits == 0xffffffffu) {
        return CUDART_NAN_F;
    }
    return __uint_as_float((bits & 0x80000000u) != 0 ? bits & 0x7fffffffu : ~bits);
}

__device__ __forceinline__ double ml_order_value(unsigned long long bits) {
    if (bits == ~0ull) {
        return CUDART_NAN;
    }
    return __longlong_as_double(
        (long long) ((bits >> 63) != 0 ? bits & 0x7fffffffffffffffull : ~bits));
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
    static __device__ __forceinline__ float value(Key a) {
        return ml_order_value((uint32_t) (a >> 32));
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

    static __device__ __forceinline__ unsigned long long bits(Key a) {
        return ((unsigned long long) a.hi << 32) | a.lo;
    }
    static __device__ __forceinline__ double value(Key a) {
        return ml_order_value(bits(a));
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
        unsigned long long va = bits(a);
        unsigned long long vb = bits(b);
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
        at[0] = bits(a);
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

// The k (<= KMAX) smallest of the n keys at `keys` (S::WORDS words each, the no-key among them allowed), ascending,
// into sink, by the whole block (every thread must call it).
template <typename S, int KMAX, typename Sink>
__device__ __forceinline__ void ml_select_keys(const unsigned long long* __restrict__ keys, int64_t n, int64_t k,
                                               const Sink& sink) {
    MlTopK<S, KMAX> list;
    list.clear();
    for (int64_t i = threadIdx.x; i < n; i += ML_BLOCK) {
        list.offer(S::load(keys + i * S::WORDS), k);
    }
    ml_select_emit(list, k, ML_BLOCK, sink);
}

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
        MlRowSink<T, S> sink = {values + r * cols, outValues + r * k, outIds + r * k, idOffset};
        ml_select_keys<S, KMAX>(partial + r * n * S::WORDS, n, k, sink);
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

}  // namespace
