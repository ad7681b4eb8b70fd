package io.cuwire.transport.internal.tcp;

import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Transport;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.socket.SocketListener;
import io.cuwire.transport.internal.socket.Sockets;
import io.cuwire.transport.internal.socket.TlsSession;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.util.function.Predicate;

/** TCP over NIO sockets ({@code tcp://host:port}); see {@link TcpConnection} for the wire. */
public final class TcpTransport implements Transport {
    public static final TcpTransport INSTANCE = new TcpTransport(true);
    /**
     * TCP that stages every device frame through its {@link StagingRing}, as it must for a device the host cannot
     * address (a CUDA GPU), even where the host can ({@link io.cuwire.memory.Device#hostAddressable()}, the
     * emulated device, which {@link #INSTANCE} reads and writes in place): for tests, so that CI, which runs on the
     * emulated device, exercises the ring a GPU uses.
     */
    public static final TcpTransport STAGING_DEVICE_FRAMES = new TcpTransport(false);

    /** Whether connections read and write host-addressable device memory in place (else through the ring). */
    private final boolean deviceInPlace;

    private TcpTransport(boolean deviceInPlace) {
        this.deviceInPlace = deviceInPlace;
    }

    @Override
    public String name() {
        return Transports.TCP;
    }

    @Override
    public Listener listen(String address, TransportConfig config) {
        return listen(Sockets.parse(Transports.TCP, address), config, InetAddress::isLoopbackAddress, deviceInPlace);
    }

    @Override
    public Connection connect(String address, TransportConfig config) {
        SocketChannel channel = Sockets.open(Transports.TCP, address, config);
        InetSocketAddress remote = (InetSocketAddress) channel.socket().getRemoteSocketAddress();
        Capabilities local = Capabilities.local(config.families());
        if (!config.tls().clientUsesTls(remote.getAddress())) {
            return new TcpConnection(
                    channel, config, Sockets.handshake(channel, config, local), true, null, deviceInPlace);
        }
        try {
            String peer = String.valueOf(remote);
            TlsSession tls = TlsSession.client(
                    channel, peer, System.nanoTime() + config.handshakeTimeout().toNanos());
            Handshake.Result handshake = Handshake.run(
                    tls.records(), config, true, local, Handshake.endpoint(remote), () -> {}, tls.binding());
            return new TcpConnection(channel, config, handshake, true, tls, deviceInPlace);
        } catch (RuntimeException e) {
            Sockets.closeQuietly(channel);
            throw e;
        }
    }

    /** A {@code tcp://} listener at {@code bind} that takes a peer for loopback where {@code loopback} says so. */
    public static SocketListener listen(
            InetSocketAddress bind, TransportConfig config, Predicate<InetAddress> loopback) {
        return listen(bind, config, loopback, true);
    }

    private static SocketListener listen(
            InetSocketAddress bind, TransportConfig config, Predicate<InetAddress> loopback, boolean deviceInPlace) {
        return SocketListener.withTls(
                Transports.TCP,
                bind,
                config,
                Capabilities.local(config.families()),
                loopback,
                (channel, handshake, c, tls) -> new TcpConnection(channel, c, handshake, false, tls, deviceInPlace));
    }
}
