// The fused cross-entropy: loss per row and its gradient in the logits.
// Implementation in detail/loss.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/loss.cuh"
