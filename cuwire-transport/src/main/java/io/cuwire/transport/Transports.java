package io.cuwire.transport;

import io.cuwire.transport.internal.inproc.InProcessTransport;
import io.cuwire.transport.internal.ipc.IpcTransport;
import io.cuwire.transport.internal.tcp.TcpTransport;
import io.cuwire.transport.internal.ucx.UcxTransport;

/** The transports of this module, by name or by address scheme. */
public final class Transports {
    /** The TCP transport's name and scheme. */
    public static final String TCP = "tcp";
    /** The in-process transport's name and scheme. */
    public static final String IN_PROCESS = "inproc";
    /** The CUDA IPC transport's name and scheme. */
    public static final String IPC = "ipc";
    /** The UCX transport's name and scheme. */
    public static final String UCX = "ucx";

    private Transports() {
    }

    /** TCP over NIO sockets; device frames staged through pinned bounce buffers. */
    public static Transport tcp() {
        return TcpTransport.INSTANCE;
    }

    /** Between two parts of one JVM; frames are lent to the receiver, never copied. */
    public static Transport inProcess() {
        return InProcessTransport.INSTANCE;
    }

    /**
     * CUDA IPC between processes of one host on the same device platform: control and host frames over TCP, device
     * frames copied device to device through cached IPC mappings of the sender's allocations.
     */
    public static Transport ipc() {
        return IpcTransport.INSTANCE;
    }

    /**
     * UCX through JUCX over the system's UCX ({@code libucx0}); device frames direct when that UCX carries CUDA
     * memory, staged otherwise. JUCX ({@code org.openucx:jucx}) is an optional dependency of this module: add it to
     * use UCX. Its listeners and connections throw {@link TransportUnavailableException}, naming what to add, where
     * JUCX or the system UCX is missing.
     */
    public static Transport ucx() {
        return UcxTransport.INSTANCE;
    }

    /**
     * The transport whose scheme starts {@code address} ({@code tcp://…}, {@code ipc://…}, {@code ucx://…},
     * {@code inproc://…}).
     */
    public static Transport forAddress(String address) {
        int colon = address.indexOf("://");
        String scheme = colon < 0 ? "" : address.substring(0, colon);
        return switch (scheme) {
            case TCP -> tcp();
            case IN_PROCESS -> inProcess();
            case IPC -> ipc();
            case UCX -> ucx();
            default -> throw new TransportException("no transport for address '" + address
                    + "' (expected: tcp://host:port, ipc://host:port, ucx://host:port or inproc://name)");
        };
    }
}
