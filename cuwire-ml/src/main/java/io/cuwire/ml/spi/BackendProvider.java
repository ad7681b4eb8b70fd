package io.cuwire.ml.spi;

import io.cuwire.memory.Device;
import io.cuwire.ml.ComputeBackend;

/**
 * A compute backend for the devices of one platform, found with {@link java.util.ServiceLoader}: cuwire-ml-cuda's
 * CUDA backend (cuBLAS and its kernels) registers one for {@code cuda}. Host memory and the emulated device are served
 * by cuwire-ml's own CPU backend without a provider.
 */
public interface BackendProvider {
    /** The device platform served, as {@link Device#platform()} names it: {@code cuda}. */
    String platform();

    /** The backend for {@code device}, made once per device and kept for the process. */
    ComputeBackend open(Device device);
}
