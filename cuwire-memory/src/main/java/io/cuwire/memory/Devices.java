package io.cuwire.memory;

import io.cuwire.memory.spi.DeviceProvider;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * The devices of this process, from the best platform that opens here: CUDA when {@code libcuda.so.1} and a GPU are
 * present (and {@code cuwire-cuda} is on the class path), else the emulated device. The choice is made once, on
 * first use, and logged once with the reasons other platforms were passed over.
 *
 * <p>The system property {@value #PLATFORM_PROPERTY} forces a platform ({@code cuda} or {@code emulated}); a forced
 * platform that can't open is an error rather than a fallback.
 */
public final class Devices {
    /** System property naming the platform to use instead of the best available. */
    public static final String PLATFORM_PROPERTY = "cuwire.device.platform";

    private static final System.Logger LOG = System.getLogger("io.cuwire.memory.Devices");

    private static volatile Selection selection;

    private Devices() {}

    /** The chosen platform, its devices, and why each better platform was not taken. */
    public record Selection(String platform, List<Device> devices, Map<String, String> passedOver) {
        public Selection {
            devices = List.copyOf(devices);
            passedOver = Map.copyOf(passedOver);
        }
    }

    /** The selection, made on first call. */
    public static Selection selection() {
        Selection s = selection;
        if (s == null) {
            synchronized (Devices.class) {
                s = selection;
                if (s == null) {
                    s = select();
                    selection = s;
                }
            }
        }
        return s;
    }

    /** All devices of the chosen platform, by ordinal. */
    public static List<Device> all() {
        return selection().devices();
    }

    /** The device with {@code ordinal}. */
    public static Device get(int ordinal) {
        List<Device> devices = all();
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new IllegalArgumentException("device ordinal: " + ordinal + " (expected: 0 <= ordinal < "
                    + devices.size() + " on platform " + selection().platform() + ")");
        }
        return devices.get(ordinal);
    }

    /** The chosen platform's name. */
    public static String platform() {
        return selection().platform();
    }

    private static Selection select() {
        List<DeviceProvider> providers = new ArrayList<>();
        ServiceLoader.load(DeviceProvider.class, Devices.class.getClassLoader()).forEach(providers::add);
        providers.sort(Comparator.comparingInt(DeviceProvider::priority).reversed());
        String forced = System.getProperty(PLATFORM_PROPERTY);
        Map<String, String> passedOver = new LinkedHashMap<>();
        for (DeviceProvider provider : providers) {
            if (forced != null && !forced.equals(provider.platform())) {
                passedOver.put(provider.platform(), "not the platform forced by -D" + PLATFORM_PROPERTY);
                continue;
            }
            try {
                List<Device> devices = provider.open();
                if (devices.isEmpty()) {
                    throw new DeviceUnavailableException("no devices");
                }
                Selection s = new Selection(provider.platform(), devices, passedOver);
                LOG.log(
                        System.Logger.Level.INFO,
                        "cuwire devices: platform {0}, {1} device(s){2}",
                        s.platform(),
                        devices.size(),
                        passedOver.isEmpty() ? "" : "; passed over: " + passedOver);
                return s;
            } catch (DeviceUnavailableException | RuntimeException | LinkageError e) {
                if (forced != null) {
                    throw new MemoryException(
                            "device platform '" + forced + "' forced by -D" + PLATFORM_PROPERTY + " is unavailable: "
                                    + e.getMessage(),
                            e);
                }
                passedOver.put(provider.platform(), String.valueOf(e.getMessage()));
            }
        }
        throw new MemoryException("no device platform could be opened"
                + (forced == null ? "" : " (-D" + PLATFORM_PROPERTY + "=" + forced + " matched none)")
                + "; tried: " + passedOver);
    }
}
