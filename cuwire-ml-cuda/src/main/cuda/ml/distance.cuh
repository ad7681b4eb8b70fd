// Distances and row-group products: row groups (a few lanes a row), gemv rows, nearest rows (scalar, float4 and
// registers kernels), row squared norms, add norms and clamp.
// Implementation in detail/distance.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/distance.cuh"
