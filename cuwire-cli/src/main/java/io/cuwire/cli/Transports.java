package io.cuwire.cli;

import io.cuwire.transport.spi.Availability;
import io.cuwire.transport.spi.TransportProvider;
import java.util.List;

/** Which transports this machine can use, given the chosen device platform. */
public final class Transports {
    /** The native library JUCX needs; Debian ships it in {@code libucx0}. */
    public static final String UCX_LIBRARY = "libucp.so.0";

    private Transports() {}

    /** A transport's name and whether it is available here. */
    public record Status(String name, Availability availability) {}

    /** Every transport: in-process, TCP, UCX, IPC. */
    public static List<Status> detect(String platform) {
        return List.of(
                new Status("inproc", Availability.available("client and workers in one JVM")),
                new Status("tcp", Availability.available("sockets, staged through pinned host buffers")),
                new Status("ucx", ucx()),
                new Status("ipc", ipc(platform)));
    }

    static Availability ipc(String platform) {
        return switch (platform) {
            case "cuda" -> Availability.available("CUDA IPC memory handles");
            case "emulated" -> Availability.available("emulated shared-memory handles");
            default -> Availability.unavailable("platform " + platform + " has no IPC handles");
        };
    }

    /**
     * UCX: missing when {@code libucp.so.0} is not found; else what its provider says, which loads it and names it
     * (version, library, modules, whether it carries CUDA memory).
     */
    static Availability ucx() {
        Availability lib = NativeLibraries.probe(UCX_LIBRARY);
        if (!lib.available()) {
            return Availability.unavailable(lib.reason() + "; install the system UCX (Debian: libucx0)");
        }
        for (TransportProvider p : io.cuwire.transport.Transports.providers()) {
            if (p.scheme().equals(io.cuwire.transport.Transports.UCX)) {
                return p.availability();
            }
        }
        return Availability.unavailable(lib.reason() + ", but no provider of ucx:// is on the class path");
    }
}
