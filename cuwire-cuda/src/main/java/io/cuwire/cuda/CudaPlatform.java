package io.cuwire.cuda;

import io.cuwire.memory.spi.DeviceUnavailableException;
import java.util.ArrayList;
import java.util.List;

/**
 * The CUDA devices of this process, opened once: one {@link CudaDevice} per visible GPU, living as long as the
 * process. A device's primary context is retained on its first use, so a process that uses one GPU of eight
 * creates one context.
 */
final class CudaPlatform {
    private static volatile CudaPlatform instance;

    private final List<CudaDevice> devices;
    private volatile boolean autoPeerAccess = true;

    private CudaPlatform(List<CudaDevice> devices) {
        this.devices = List.copyOf(devices);
    }

    /**
     * The platform, opened on first call.
     *
     * @throws DeviceUnavailableException naming why when the driver or a GPU is missing
     */
    public static CudaPlatform get() throws DeviceUnavailableException {
        CudaPlatform p = instance;
        if (p == null) {
            synchronized (CudaPlatform.class) {
                p = instance;
                if (p == null) {
                    p = open();
                    instance = p;
                }
            }
        }
        return p;
    }

    private static CudaPlatform open() throws DeviceUnavailableException {
        String failure = Driver.failure();
        if (failure != null) {
            throw new DeviceUnavailableException(failure);
        }
        int count = Driver.deviceCount();
        List<CudaDevice> list = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            list.add(new CudaDevice(i, Driver.device(i)));
        }
        CudaPlatform platform = new CudaPlatform(list);
        for (CudaDevice d : list) {
            d.attach(platform);
        }
        return platform;
    }

    /** The devices, by ordinal. */
    public List<CudaDevice> devices() {
        return devices;
    }

    /** The device with {@code ordinal}. */
    public CudaDevice device(int ordinal) {
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new IllegalArgumentException(
                    "CUDA device ordinal: " + ordinal + " (expected: 0 <= ordinal < " + devices.size() + ")");
        }
        return devices.get(ordinal);
    }

    /** The device whose PCI bus id is {@code busId}, or {@code null} if it is not visible to this process. */
    CudaDevice deviceByPciBusId(String busId) {
        for (CudaDevice d : devices) {
            if (d.pciBusId().equalsIgnoreCase(busId)) {
                return d;
            }
        }
        return null;
    }

    /**
     * Whether the first copy between two devices enables peer access in both directions (the default). The copy
     * benchmark turns it off to measure copies the driver stages; nothing else should.
     */
    public void setAutoPeerAccess(boolean enabled) {
        this.autoPeerAccess = enabled;
    }

    boolean autoPeerAccess() {
        return autoPeerAccess;
    }
}
