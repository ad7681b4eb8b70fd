// Element-wise kernels: map (a UnaryOp per element), broadcast rows (a BinaryOp against a row vector), row-wise
// softmax.
// Implementation in detail/elementwise.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/elementwise.cuh"
