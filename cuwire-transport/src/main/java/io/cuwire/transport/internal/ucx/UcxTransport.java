package io.cuwire.transport.internal.ucx;

import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Transport;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.Transports;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.socket.SocketListener;
import io.cuwire.transport.internal.socket.Sockets;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;

/**
 * UCX through JUCX ({@code ucx://host:port}); see {@link UcxConnection} for the wire.
 *
 * <p>Connections are set up over a small TCP socket at {@code host:port} rather than through a {@code UcpListener}:
 * the handshake (proof of the secret, capabilities) runs there before any UCX resource is made for the peer, the
 * two sides then swap their UCX worker addresses on it, and afterwards it tells a clean close from a death. A
 * {@code UcpListener} would need UCX's sockaddr connection managers (TCP or RDMA-CM) and an active-message or stream
 * channel for the handshake; on UCX 1.13 the active-message path with JUCX 1.16's default memory types fails, and a
 * socket keeps the handshake identical to the TCP transport's.
 */
public final class UcxTransport implements Transport {
    public static final UcxTransport INSTANCE = new UcxTransport();

    private UcxTransport() {}

    /** Whether UCX loads in this process (it is loaded on first use). */
    public static boolean available() {
        return Ucx.available();
    }

    /** Whether this process's UCX moves CUDA memory itself (its context reports the CUDA memory type). */
    public static boolean carriesCuda() {
        return Ucx.get().carriesCuda();
    }

    /** Why UCX does not load here, or {@code null} when it does. */
    public static String unavailableReason() {
        try {
            Ucx.get();
            return null;
        } catch (TransportException e) {
            return e.getMessage();
        }
    }

    @Override
    public String name() {
        return Transports.UCX;
    }

    @Override
    public Listener listen(String address, TransportConfig config) {
        InetSocketAddress bind = Sockets.parse(Transports.UCX, address);
        Ucx ucx = Ucx.get();
        return new SocketListener(
                Transports.UCX,
                bind,
                config,
                local(ucx, config),
                (channel, handshake, c) -> new UcxConnection(ucx, channel.socket(), c, handshake, false));
    }

    @Override
    public Connection connect(String address, TransportConfig config) {
        Sockets.parse(Transports.UCX, address);
        Ucx ucx = Ucx.get();
        SocketChannel channel = Sockets.open(Transports.UCX, address, config);
        Handshake.Result handshake = Sockets.handshake(channel, config, local(ucx, config));
        return new UcxConnection(ucx, channel.socket(), config, handshake, true);
    }

    private static Capabilities local(Ucx ucx, TransportConfig config) {
        return Capabilities.local(config.families()).withUcx(ucx.carriesCuda());
    }
}
