/**
 * CUDA for cuwire: availability ({@link io.cuwire.cuda.Cuda}), errors ({@link io.cuwire.cuda.CudaException}),
 * timing events, cuwire's kernels ({@link io.cuwire.cuda.Kernels}) and cuBLAS ({@link io.cuwire.cuda.CuBlas}).
 * CUDA devices themselves are {@link io.cuwire.memory.Device}s, found through {@link io.cuwire.memory.Devices}.
 * No raw pointer or driver handle appears here: buffers are {@link io.cuwire.memory.DeviceBuffer}s and streams
 * are {@link io.cuwire.memory.Stream}s.
 */
package io.cuwire.cuda;
