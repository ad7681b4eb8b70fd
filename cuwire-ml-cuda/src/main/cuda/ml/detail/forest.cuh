// The implementation of ml/forest.cuh.
#pragma once

#include "../common.cuh"

namespace {

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

// ---------------------------------------------------------------- growing trees on histograms
// The device half of io.cuwire.ml.ensemble's histogram split finding (ForestBins, Cart's binned scan), level by level:
// the host keeps the nodes, draws each node's features from the tree's random sequence and uploads them; these kernels
// do the row work. A tree's sample is `count` entries row[i] (a bootstrap repeats rows), each in the node slot[i] of
// the current level (-1: in a leaf already). A slot being split has its k drawn features in drawn[slot * k ..]
// (drawn[slot * k] = -1: the slot is not split). Histograms have ML_FOREST_BINS bins per (slot, drawn feature).

#define ML_FOREST_BINS 256

namespace {

// codes[f * rows + r] = the number of edges of feature f below x[r, f]; feature f's edges are
// edges[edgeStart[f] .. edgeStart[f + 1]), ascending. Compared in double, as the CPU backend does.
template <typename T>
__device__ void ml_grow_quantize(int64_t rows, int32_t cols, const T* x, const double* edges,
                                   const int64_t* edgeStart, uint8_t* codes) {
    GRID_STRIDE_LOOP(i, rows * cols) {
        int64_t r = i / cols;
        int32_t f = (int32_t) (i - r * cols);
        double v = (double) x[i];
        int64_t first = edgeStart[f];
        int64_t lo = first;
        int64_t hi = edgeStart[f + 1];
        while (lo < hi) {
            int64_t mid = (lo + hi) >> 1;
            if (edges[mid] < v) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        codes[(int64_t) f * rows + r] = (uint8_t) (lo - first);
    }
}

// Class counts: hist[((slot * k + t) * ML_FOREST_BINS + bin) * classes + label] += 1 for each entry and drawn feature
// t of its slot. Integer counts: the same whatever order the atomics land in.
__device__ void ml_grow_class_histogram(int64_t count, int64_t rows, int32_t k, int32_t classes,
                                          const int32_t* row, const int32_t* slot, const int32_t* drawn,
                                          const uint8_t* codes, const int32_t* labels, unsigned int* hist) {
    GRID_STRIDE_LOOP(i, count * k) {
        int64_t e = i / k;
        int32_t t = (int32_t) (i - e * k);
        int32_t s = slot[e];
        if (s < 0) {
            continue;
        }
        int32_t f = drawn[(int64_t) s * k + t];
        if (f < 0) {
            continue;
        }
        int32_t r = row[e];
        int32_t b = codes[(int64_t) f * rows + r];
        atomicAdd(&hist[(((int64_t) s * k + t) * ML_FOREST_BINS + b) * classes + labels[r]], 1u);
    }
}

// Target sums and counts: sum[(slot * k + t) * ML_FOREST_BINS + bin] += values[row], rowsIn[...] += 1. The double
// sums depend on the order the atomics land in (the CPU sums in the node's row order).
__device__ void ml_grow_value_histogram(int64_t count, int64_t rows, int32_t k, const int32_t* row,
                                          const int32_t* slot, const int32_t* drawn, const uint8_t* codes,
                                          const double* values, double* sum, unsigned int* rowsIn) {
    GRID_STRIDE_LOOP(i, count * k) {
        int64_t e = i / k;
        int32_t t = (int32_t) (i - e * k);
        int32_t s = slot[e];
        if (s < 0) {
            continue;
        }
        int32_t f = drawn[(int64_t) s * k + t];
        if (f < 0) {
            continue;
        }
        int32_t r = row[e];
        int64_t at = ((int64_t) s * k + t) * ML_FOREST_BINS + codes[(int64_t) f * rows + r];
        atomicAdd(&sum[at], values[r]);
        atomicAdd(&rowsIn[at], 1u);
    }
}

// One thread per slot being split: Cart.bestSplit over the histograms of its k drawn features in draw order, each
// scanned as Cart.scanBins does (bins ascending, a candidate after each bin that holds rows of the node, both sides
// keeping minLeaf rows, the score sum_c L_c^2 / nL + sum_c R_c^2 / nR, strictly better wins), kept when it beats the
// parent's score sum_c N_c^2 / n by more than 1e-12 of it. Writes bestT[slot] (-1: no split), bestBin[slot],
// bestScore[slot] and the left side's class counts left[slot * classes + c]; work holds 2 x classes doubles a slot.
// Counts are integers held exactly in double and no product is fused into a sum, so scores are the CPU's, bit for bit.
__device__ void ml_grow_best_class_split(int32_t slots, int32_t k, int32_t classes, int32_t minLeaf,
                                           const int32_t* drawn, const unsigned int* hist, double* work,
                                           int32_t* bestT, int32_t* bestBin, double* bestScore, double* left) {
    GRID_STRIDE_LOOP(s, slots) {
        bestT[s] = -1;
        bestBin[s] = -1;
        bestScore[s] = 0;
        if (drawn[s * k] < 0) {
            continue;
        }
        double* l = work + 2 * s * classes;
        double* r = l + classes;
        const unsigned int* h0 = hist + (int64_t) s * k * ML_FOREST_BINS * classes;
        double n = 0;
        double sq = 0;
        for (int32_t c = 0; c < classes; c++) {
            double total = 0;
            for (int32_t b = 0; b < ML_FOREST_BINS; b++) {
                total += h0[b * classes + c];
            }
            n += total;
            sq = __dadd_rn(sq, __dmul_rn(total, total));
        }
        double parent = sq / n;
        double bar = __dadd_rn(parent, __dmul_rn(1e-12, fabs(parent)));
        int32_t bt = -1;
        int32_t bb = -1;
        double best = 0;
        for (int32_t t = 0; t < k; t++) {
            const unsigned int* h = hist + ((int64_t) s * k + t) * ML_FOREST_BINS * classes;
            for (int32_t c = 0; c < classes; c++) {
                l[c] = 0;
                r[c] = 0;
            }
            for (int32_t b = 0; b < ML_FOREST_BINS; b++) {
                for (int32_t c = 0; c < classes; c++) {
                    r[c] += h[b * classes + c];
                }
            }
            bool found = false;
            int32_t fb = -1;
            double fs = 0;
            double nl = 0;
            for (int32_t b = 0; b < ML_FOREST_BINS - 1; b++) {
                double inBin = 0;
                for (int32_t c = 0; c < classes; c++) {
                    inBin += h[b * classes + c];
                }
                if (inBin == 0) {
                    continue;
                }
                double sqL = 0;
                double sqR = 0;
                for (int32_t c = 0; c < classes; c++) {
                    double v = h[b * classes + c];
                    l[c] += v;
                    r[c] -= v;
                    sqL = __dadd_rn(sqL, __dmul_rn(l[c], l[c]));
                    sqR = __dadd_rn(sqR, __dmul_rn(r[c], r[c]));
                }
                nl += inBin;
                if (nl == n) {
                    break;
                }
                if (nl < minLeaf || n - nl < minLeaf) {
                    continue;
                }
                double score = __dadd_rn(sqL / nl, sqR / (n - nl));
                if (!found || score > fs) {
                    found = true;
                    fs = score;
                    fb = b;
                }
            }
            if (found && fs > bar && (bt < 0 || fs > best)) {
                bt = t;
                bb = fb;
                best = fs;
            }
        }
        bestT[s] = bt;
        bestBin[s] = bb;
        bestScore[s] = best;
        for (int32_t c = 0; c < classes; c++) {
            double v = 0;
            if (bt >= 0) {
                const unsigned int* h = hist + ((int64_t) s * k + bt) * ML_FOREST_BINS * classes;
                for (int32_t b = 0; b <= bb; b++) {
                    v += h[b * classes + c];
                }
            }
            left[(int64_t) s * classes + c] = v;
        }
    }
}

// The same for target sums (the squared-error decrease L^2 / nL + R^2 / nR against the parent's S^2 / n, the sums
// taken over the bins in order). Writes bestT, bestBin, bestScore and the left side's sum and rows (2 doubles a slot).
__device__ void ml_grow_best_value_split(int32_t slots, int32_t k, int32_t minLeaf, const int32_t* drawn,
                                           const double* sum, const unsigned int* rowsIn, int32_t* bestT,
                                           int32_t* bestBin, double* bestScore, double* left) {
    GRID_STRIDE_LOOP(s, slots) {
        bestT[s] = -1;
        bestBin[s] = -1;
        bestScore[s] = 0;
        left[2 * s] = 0;
        left[2 * s + 1] = 0;
        if (drawn[s * k] < 0) {
            continue;
        }
        const double* s0 = sum + (int64_t) s * k * ML_FOREST_BINS;
        const unsigned int* n0 = rowsIn + (int64_t) s * k * ML_FOREST_BINS;
        double total = 0;
        double n = 0;
        for (int32_t b = 0; b < ML_FOREST_BINS; b++) {
            total += s0[b];
            n += n0[b];
        }
        double parent = __dmul_rn(total, total) / n;
        double bar = __dadd_rn(parent, __dmul_rn(1e-12, fabs(parent)));
        int32_t bt = -1;
        int32_t bb = -1;
        double best = 0;
        for (int32_t t = 0; t < k; t++) {
            const double* hs = sum + ((int64_t) s * k + t) * ML_FOREST_BINS;
            const unsigned int* hn = rowsIn + ((int64_t) s * k + t) * ML_FOREST_BINS;
            double all = 0;
            for (int32_t b = 0; b < ML_FOREST_BINS; b++) {
                all += hs[b];
            }
            bool found = false;
            int32_t fb = -1;
            double fs = 0;
            double sl = 0;
            double nl = 0;
            for (int32_t b = 0; b < ML_FOREST_BINS - 1; b++) {
                if (hn[b] == 0) {
                    continue;
                }
                sl += hs[b];
                nl += hn[b];
                if (nl == n) {
                    break;
                }
                if (nl < minLeaf || n - nl < minLeaf) {
                    continue;
                }
                double sr = all - sl;
                double score = __dadd_rn(__dmul_rn(sl, sl) / nl, __dmul_rn(sr, sr) / (n - nl));
                if (!found || score > fs) {
                    found = true;
                    fs = score;
                    fb = b;
                }
            }
            if (found && fs > bar && (bt < 0 || fs > best)) {
                bt = t;
                bb = fb;
                best = fs;
            }
        }
        bestT[s] = bt;
        bestBin[s] = bb;
        bestScore[s] = best;
        if (bt >= 0) {
            const double* hs = sum + ((int64_t) s * k + bt) * ML_FOREST_BINS;
            const unsigned int* hn = rowsIn + ((int64_t) s * k + bt) * ML_FOREST_BINS;
            double sl = 0;
            double nl = 0;
            for (int32_t b = 0; b <= bb; b++) {
                sl += hs[b];
                nl += hn[b];
            }
            left[2 * s] = sl;
            left[2 * s + 1] = nl;
        }
    }
}

// Row partitioning: each entry of a slot split on (feature[slot], bin[slot]) moves to the next level's slot
// child[slot] (codes <= bin) or child[slot] + 1; an entry of a slot not split (feature -1) leaves the tree's levels
// (slot -1).
__device__ void ml_grow_partition(int64_t count, int64_t rows, const int32_t* row, int32_t* slot,
                                    const int32_t* feature, const int32_t* bin, const int32_t* child,
                                    const uint8_t* codes) {
    GRID_STRIDE_LOOP(e, count) {
        int32_t s = slot[e];
        if (s < 0) {
            continue;
        }
        int32_t f = feature[s];
        if (f < 0) {
            slot[e] = -1;
            continue;
        }
        int32_t code = codes[(int64_t) f * rows + row[e]];
        slot[e] = child[s] + (code <= bin[s] ? 0 : 1);
    }
}

// The least and greatest target of each slot, as order-preserving integers (the host's starts: ~0 and 0), so that
// the host tells pure nodes (every target equal) as Cart.pure does.
__device__ __forceinline__ unsigned long long ml_ordered(double v) {
    unsigned long long u = (unsigned long long) __double_as_longlong(v);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
}

__device__ void ml_grow_value_range(int64_t count, const int32_t* row, const int32_t* slot, const double* values,
                                      unsigned long long* lo, unsigned long long* hi) {
    GRID_STRIDE_LOOP(e, count) {
        int32_t s = slot[e];
        if (s < 0) {
            continue;
        }
        unsigned long long v = ml_ordered(values[row[e]]);
        atomicMin(&lo[s], v);
        atomicMax(&hi[s], v);
    }
}

}  // namespace
