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
