// Per-row top-k: one thread a row, the register selections of a warp or block (k8, k32) and their merge, the radix
// select and its merge, and the merge of two sorted neighbor lists.
// Implementation in detail/select.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/select.cuh"
