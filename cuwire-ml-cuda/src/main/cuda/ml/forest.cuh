// The forest walk over a cuwire.forest/1 blob.
// Implementation in detail/forest.cuh; entry points in ml_kernels.cu.
#pragma once

#include "detail/forest.cuh"
