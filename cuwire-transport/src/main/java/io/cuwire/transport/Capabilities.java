package io.cuwire.transport;

import io.cuwire.memory.Device;
import io.cuwire.memory.Devices;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What one side of a connection told the other in the handshake, after both proved the secret.
 *
 * @param formatVersion the {@link Serialized#FORMAT_VERSION} of headers it writes and reads
 * @param pid its process id
 * @param hostId the identity of its host: host name plus the kernel's boot id, so that two processes can tell
 *     whether they share a host (and could share memory)
 * @param devices its devices
 * @param transports the transports it speaks ({@code tcp}, {@code inproc}, {@code ipc}, {@code ucx})
 * @param ucxCarriesCuda whether its UCX build moves CUDA memory directly (told by UCX connections; {@code false}
 *     elsewhere)
 * @param families its serializer family chain, in order of preference
 */
public record Capabilities(
        int formatVersion,
        long pid,
        String hostId,
        List<DeviceInfo> devices,
        List<String> transports,
        boolean ucxCarriesCuda,
        List<Family> families) {
    public Capabilities {
        Objects.requireNonNull(hostId, "hostId");
        devices = List.copyOf(devices);
        transports = List.copyOf(transports);
        families = List.copyOf(families);
    }

    /**
     * One device of a peer.
     *
     * @param platform {@code cuda} or {@code emulated}
     * @param ordinal its number in the peer's process
     * @param name its name
     */
    public record DeviceInfo(String platform, int ordinal, String name) {
        public DeviceInfo {
            Objects.requireNonNull(platform, "platform");
            Objects.requireNonNull(name, "name");
        }
    }

    /** This process's capabilities, offering {@code families} and the transports this module speaks. */
    public static Capabilities local(List<Family> families) {
        List<DeviceInfo> devices = new ArrayList<>();
        for (Device d : Devices.all()) {
            devices.add(new DeviceInfo(d.platform(), d.ordinal(), d.name()));
        }
        return new Capabilities(
                Serialized.FORMAT_VERSION,
                ProcessHandle.current().pid(),
                localHostId(),
                devices,
                List.of(Transports.TCP, Transports.IN_PROCESS, Transports.IPC),
                false,
                families);
    }

    /** These capabilities as a UCX connection tells them: {@code ucx} among the transports, and its CUDA support. */
    public Capabilities withUcx(boolean carriesCuda) {
        List<String> all = new ArrayList<>(transports);
        if (!all.contains(Transports.UCX)) {
            all.add(Transports.UCX);
        }
        return new Capabilities(formatVersion, pid, hostId, devices, all, carriesCuda, families);
    }

    /** Whether {@code other} runs on the same host (same host name, same boot). */
    public boolean sameHost(Capabilities other) {
        return hostId.equals(other.hostId);
    }

    private static volatile String localHostId;

    /** Host name and boot id of this machine, e.g. {@code worker-3/2f0c…}. */
    public static String localHostId() {
        String id = localHostId;
        if (id == null) {
            String name;
            try {
                name = InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                name = "unknown-host";
            }
            String boot;
            try {
                boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id"), StandardCharsets.US_ASCII)
                        .strip();
            } catch (IOException | RuntimeException e) {
                boot = "no-boot-id";
            }
            id = name + "/" + boot;
            localHostId = id;
        }
        return id;
    }
}
