// Reductions to one number per block (the host adds the blocks in a second pass): reduce (a Reduction), dot, count
// equal; and per-row argmin/argmax.
// Implementation in detail/reduce.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/reduce.cuh"
