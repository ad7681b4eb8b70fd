// The kernels of cuwire-ml's CUDA compute backend, compiled by nvcc into io/cuwire/ml/cuda/ml_kernels.fatbin (a module
// of its own, loaded by io.cuwire.cuda.KernelModule) and launched from io.cuwire.ml.cuda.internal.MlKernels. One header
// per algorithm family under ml/ (implementations in ml/detail/); ml/common.cuh holds what they share; the extern "C" entry
// points are generated from the kernels manifest.
//
// Conventions, as in cuwire-cuda's kernels.cu: 64-bit counts and indices, grid-stride loops (any grid covers any n).
// Launches use blocks of ML_BLOCK threads (io.cuwire.cuda.KernelModule.BLOCK); the block reductions rely on it.
// Arithmetic is done in double precision whatever the element type, so that a float32 result is the double result
// rounded once, as on cuwire-ml's CPU backend; only the cuBLAS products, the float32 atomics of ml_scatter_add_rows
// (more than 192 rows out), the float32 sum of tree outputs beyond 8 classes and the float32 nearest-rows distances of
// ml_nearest_rows' float4 path (runs of 8) and ml_nearest_rows_regs (whole rows) accumulate in float32; the forest
// histograms' target sums are float64 atomics, in no fixed order. The top-k selections
// compare values exactly (as ordered integers), whatever the element type.
//
// Arguments that may alias (in and out of map, softmax, cross-entropy) are not __restrict__. Kernels that validate
// values report the smallest failing position with atomicMin into an unsigned 64-bit error word that the host
// filled with INT64_MAX before the launch.

#include "ml/elementwise.cuh"
#include "ml/reduce.cuh"
#include "ml/distance.cuh"
#include "ml/loss.cuh"
#include "ml/indexing.cuh"
#include "ml/select.cuh"
#include "ml/knn.cuh"
#include "ml/forest.cuh"

// The extern "C" entry points, generated from src/main/manifest/kernels.manifest (as is the Java table that launches
// them, io.cuwire.ml.cuda.internal.MlKernelTable).
#include "ml_entry_points.cuh"
