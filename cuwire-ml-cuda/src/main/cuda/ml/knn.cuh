// k nearest neighbors in one pass: tiles of queries and rows through shared memory, their distances selected as they
// are computed (each query's list of the best keys in shared memory), slices of the rows merged by a second kernel.
// Implementation in detail/knn.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/knn.cuh"
