package io.cuwire.cluster.internal;

import io.cuwire.cuda.Cuda;
import io.cuwire.memory.Device;
import io.cuwire.memory.Devices;
import java.util.List;

/**
 * Which device a worker binds, for {@link io.cuwire.cluster.LocalCluster}, the worker process and
 * {@code cuwire worker}: one rule, and one message when a worker is told a device its process does not have.
 * Workers inherit the client's environment, {@code CUDA_VISIBLE_DEVICES} included, so an ordinal means the same GPU
 * in both.
 */
public final class Placement {
    private Placement() {}

    /**
     * Worker {@code worker}'s device ordinal: {@code ordinals[worker mod ordinals.length]} when ordinals are given,
     * else {@code worker mod visible} (so on a host of one device every worker shares device 0).
     *
     * @param ordinals the ordinals asked for, or {@code null}
     * @param visible the devices this process sees, at least 1
     */
    public static int ordinal(int worker, int[] ordinals, int visible) {
        return ordinals != null ? ordinals[worker % ordinals.length] : worker % visible;
    }

    /**
     * This process's device {@code ordinal}.
     *
     * @throws IllegalArgumentException naming the devices this process sees, the platform and, on CUDA, the
     *     {@code CUDA_VISIBLE_DEVICES} that limits them, when it has no such device
     */
    public static Device device(int ordinal) {
        List<Device> devices = Devices.all();
        if (ordinal < 0 || ordinal >= devices.size()) {
            String platform = Devices.platform();
            throw new IllegalArgumentException(notVisible(
                    ordinal, devices.size(), platform, platform.equals("cuda") ? Cuda.visibleDevices() : null));
        }
        return devices.get(ordinal);
    }

    /**
     * The message for a device ordinal this process does not have.
     *
     * @param cudaVisibility how {@code CUDA_VISIBLE_DEVICES} limits the GPUs ({@link Cuda#visibleDevices()}), or
     *     {@code null} off CUDA
     */
    static String notVisible(int ordinal, int visible, String platform, String cudaVisibility) {
        return "device " + ordinal + " is not visible to this process: it sees " + visible + " device(s) on platform "
                + platform + (cudaVisibility == null ? "" : " (" + cudaVisibility + ")") + " (expected: 0 <= device < "
                + visible + ")";
    }
}
