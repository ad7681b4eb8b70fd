/**
 * The CUDA platform's engine, not API: the driver bindings ({@link io.cuwire.cuda.internal.Driver}, the one class
 * that binds {@code libcuda.so.1}), cuBLAS bindings, the device, its memory pool, pinned memory, streams and the driver
 * side of kernel modules.
 */
package io.cuwire.cuda.internal;
