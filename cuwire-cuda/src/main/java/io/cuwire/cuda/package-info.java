/**
 * CUDA for cuwire, the platform: availability ({@link io.cuwire.cuda.Cuda}), errors
 * ({@link io.cuwire.cuda.CudaException}), timing events, cuBLAS ({@link io.cuwire.cuda.CuBlas}), kernel launching
 * ({@link io.cuwire.cuda.KernelModule}: a fatbin resource loaded once per device; {@link io.cuwire.cuda.Kernel}: one
 * kernel with its declared signature; {@link io.cuwire.cuda.KernelArgs}: typed, checked arguments) and the platform's
 * own element-wise kernels ({@link io.cuwire.cuda.Kernels}). Compute kernels of higher layers (cuwire-ml-cuda's) are
 * modules of their own on this API.
 * CUDA devices themselves are {@link io.cuwire.memory.Device}s, found through {@link io.cuwire.memory.Devices}.
 * No raw pointer or driver handle appears here: buffers are {@link io.cuwire.memory.DeviceBuffer}s and streams
 * are {@link io.cuwire.memory.DeviceStream}s.
 *
 * <p>The engine behind these facades is package-private here, not API: the driver bindings ({@code Driver}, the one
 * class that binds {@code libcuda.so.1}), the cuBLAS bindings, the device, its memory pool, pinned memory, streams
 * and the driver side of kernel modules. It throws this package's {@link io.cuwire.cuda.CudaException} and the
 * facades call it, so it lives beside both; {@code io.cuwire.cuda.internal} holds only the service provider that
 * registers the platform with {@link io.cuwire.memory.Devices}, through this package's public API.
 */
package io.cuwire.cuda;
