package io.cuwire.cli;

import io.cuwire.memory.Device;
import io.cuwire.memory.Devices;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** What {@code cuwire info} reports: the devices of the chosen platform and the transports usable here. */
public record Info(Devices.Selection selection, List<Transports.Status> transports) {
    public Info {
        transports = List.copyOf(transports);
    }

    /** Opens the device platform (once per process) and probes the transports. */
    public static Info collect() {
        Devices.Selection selection = Devices.selection();
        return new Info(selection, Transports.detect(selection.platform()));
    }

    public void print(PrintStream out) {
        for (Device d : selection.devices()) {
            out.printf(
                    "device %d: platform=%s name=\"%s\" memory=%s free=%s%n",
                    d.ordinal(), d.platform(), d.name(), bytes(d.totalMemory()), bytes(d.freeMemory()));
        }
        out.println(
                "platform: " + selection.platform() + " chosen; passed over: " + passedOver(selection.passedOver()));
        for (Transports.Status t : transports) {
            out.println("transport " + t.name() + ": " + t.availability());
        }
    }

    static String passedOver(Map<String, String> passedOver) {
        if (passedOver.isEmpty()) {
            return "none";
        }
        return passedOver.entrySet().stream()
                .map(e -> e.getKey() + " (" + e.getValue() + ")")
                .collect(Collectors.joining(", "));
    }

    /** {@code bytes} in the largest binary unit that keeps the number at 1 or more, with one decimal. */
    static String bytes(long bytes) {
        String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        if (bytes < 1024) {
            return bytes + " B";
        }
        double value = bytes;
        int unit = -1;
        while (value >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        return String.format(Locale.ROOT, "%.1f %s", value, units[unit]);
    }
}
