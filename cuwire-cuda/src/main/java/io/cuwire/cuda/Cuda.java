package io.cuwire.cuda;

import io.cuwire.memory.Device;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.util.List;

/**
 * Whether CUDA can be used in this process, and its devices. The driver ({@code libcuda.so.1}) is loaded and
 * initialized on the first call; {@link #isAvailable()} and {@link #unavailableReason()} never throw, so they are
 * safe on machines without a driver or a GPU. Devices are usually reached through
 * {@link io.cuwire.memory.Devices}, which prefers CUDA when it is available. Thread-safe.
 */
public final class Cuda {
    /** The name of the CUDA platform, as its devices and their IPC handles report it ({@link Device#platform()}). */
    public static final String PLATFORM = "cuda";

    private Cuda() {}

    /** Whether the driver loaded, initialized, and sees at least one GPU. Never throws. */
    public static boolean isAvailable() {
        return unavailableReason().isEmpty();
    }

    /**
     * Why CUDA can't be used here (no {@code libcuda.so.1}, {@code cuInit} failing with
     * {@code CUDA_ERROR_NO_DEVICE}, ...), or the empty string when it can. Never throws.
     */
    public static String unavailableReason() {
        try {
            String failure = Driver.failure();
            return failure == null ? "" : failure;
        } catch (LinkageError | RuntimeException e) {
            return "the CUDA driver bindings failed to load: " + e;
        }
    }

    /**
     * How {@code CUDA_VISIBLE_DEVICES} limits the GPUs this process sees, for messages:
     * {@code CUDA_VISIBLE_DEVICES="1"} (the driver shows only GPU 1, as device 0), {@code CUDA_VISIBLE_DEVICES=""}
     * (none), or
     * {@code CUDA_VISIBLE_DEVICES not set} (all). Child processes inherit it, and with it the same numbering. Never
     * throws.
     */
    public static String visibleDevices() {
        return Driver.visibleDevices(System.getenv(Driver.VISIBLE_DEVICES));
    }

    /** The number of visible GPUs; 0 when CUDA is unavailable. */
    public static int deviceCount() {
        return isAvailable() ? Driver.deviceCount() : 0;
    }

    /** The driver's CUDA version, e.g. {@code 13.0}. */
    public static String driverVersion() {
        int v = Driver.driverVersion();
        return v / 1000 + "." + v % 1000 / 10;
    }

    /**
     * The CUDA devices, by ordinal.
     *
     * @throws CudaException naming why when CUDA is unavailable
     */
    public static List<Device> devices() {
        try {
            return List.copyOf(CudaPlatform.get().devices());
        } catch (DeviceUnavailableException e) {
            throw new CudaException("CUDA is not available: " + e.getMessage(), e);
        }
    }

    /** The CUDA device with {@code ordinal}. */
    public static Device device(int ordinal) {
        try {
            return CudaPlatform.get().device(ordinal);
        } catch (DeviceUnavailableException e) {
            throw new CudaException("CUDA is not available: " + e.getMessage(), e);
        }
    }

    /** Counters of {@code device}'s memory pool. */
    public static PoolStats poolStats(Device device) {
        return cuda(device).pool().stats();
    }

    /** Frees the blocks {@code device}'s memory pool keeps for reuse; returns the bytes freed. */
    public static long trimPool(Device device) {
        return cuda(device).pool().trim();
    }

    /**
     * Whether peer access from {@code from} to {@code to} has been enabled in this process (the first copy between
     * two devices enables it in both directions, unless {@link #setAutoPeerAccess(boolean)} turned that off).
     *
     * @throws IllegalArgumentException if either is not a CUDA device
     */
    public static boolean peerAccessEnabled(Device from, Device to) {
        return cuda(from).peerAccessEnabled(cuda(to));
    }

    /**
     * Whether the first copy between two devices enables peer access in both directions ({@code true}, the
     * default). For measuring the copies the driver stages without it (the copy benchmark); nothing else should
     * turn it off.
     *
     * @throws CudaException naming why when CUDA is unavailable
     */
    public static void setAutoPeerAccess(boolean enabled) {
        try {
            CudaPlatform.get().setAutoPeerAccess(enabled);
        } catch (DeviceUnavailableException e) {
            throw new CudaException("CUDA is not available: " + e.getMessage(), e);
        }
    }

    static CudaDevice cuda(Device device) {
        if (device instanceof CudaDevice d) {
            return d;
        }
        throw new IllegalArgumentException(device + " is not a CUDA device");
    }
}
