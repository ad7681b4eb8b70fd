// Distances and row-group products: row groups (a few lanes a row), gemv rows, nearest rows (one kernel with a scalar
// and a float4 path, and the registers kernels), the exact distances of chosen neighbors, row squared norms, add norms
// and clamp.
// Implementation in detail/distance.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/distance.cuh"
