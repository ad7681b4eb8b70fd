// Gathers, scatters and counts: gather rows, scatter-add rows (atomic, or deterministic sums and their finish),
// bincount (atomic or per block), count rows.
// Implementation in detail/indexing.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/indexing.cuh"
