package io.cuwire.ml.spi;

import io.cuwire.memory.Device;
import io.cuwire.ml.ComputeBackend;
import java.util.Optional;

/**
 * A compute backend for the devices of one platform, found with {@link java.util.ServiceLoader}: cuwire-ml registers
 * its pure-Java CPU backend for {@code emulated} (and host memory, {@link #hostBackend()}), cuwire-ml-cuda its CUDA
 * backend (cuBLAS and its kernels) for {@code cuda}.
 */
public interface BackendProvider {
    /** The device platform served, as {@link Device#platform()} names it: {@code cuda}. */
    String platform();

    /** The backend for {@code device}, made once per device and kept for the process. */
    ComputeBackend open(Device device);

    /**
     * The backend for host memory (host and pinned buffers, which belong to no device), where this provider's backend
     * computes there: cuwire-ml's CPU backend does; no other provider should. Empty by default.
     */
    default Optional<ComputeBackend> hostBackend() {
        return Optional.empty();
    }
}
