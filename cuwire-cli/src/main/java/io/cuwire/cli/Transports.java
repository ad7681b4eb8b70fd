package io.cuwire.cli;

import io.cuwire.transport.spi.Availability;
import java.util.List;

/** Which transports this machine can use, given the chosen device platform. */
public final class Transports {
    /** The native library JUCX needs; Debian ships it in {@code libucx0}. */
    public static final String UCX_LIBRARY = "libucp.so.0";

    private Transports() {
    }

    /** A transport's name and whether it is available here. */
    public record Status(String name, Availability availability) {
    }

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

    static Availability ucx() {
        Availability lib = NativeLibraries.probe(UCX_LIBRARY);
        return lib.available() ? lib
                : Availability.unavailable(lib.reason() + "; install the system UCX (Debian: libucx0)");
    }
}
