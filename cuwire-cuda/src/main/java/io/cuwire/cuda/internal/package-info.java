/**
 * The CUDA platform's registration, not API: {@link io.cuwire.cuda.internal.CudaDeviceProvider}, the
 * {@link io.cuwire.memory.spi.DeviceProvider} by which {@link io.cuwire.memory.Devices} finds CUDA (a service provider
 * must be a public class, and this package is not exported). It uses the public API of {@code io.cuwire.cuda} alone,
 * so the dependency points one way: the engine (the driver bindings, cuBLAS bindings, the device, its memory pool,
 * pinned memory, streams and the driver side of kernel modules) is package-private in {@code io.cuwire.cuda}, beside
 * the facades that use it and the exception it throws.
 */
package io.cuwire.cuda.internal;
