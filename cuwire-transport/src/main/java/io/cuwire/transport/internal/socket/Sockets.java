package io.cuwire.transport.internal.socket;

import io.cuwire.transport.Capabilities;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.internal.Handshake;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.channels.Channel;
import java.nio.channels.SocketChannel;

/**
 * The client side of the transports over sockets (TCP, and the control sockets of CUDA IPC and UCX): parsing
 * {@code scheme://host:port}, connecting with the configured timeout, the socket options, the client side of the
 * handshake. {@link SocketListener} is the server side.
 */
public final class Sockets {
    private Sockets() {}

    /**
     * Runs the client side of the handshake over a socket from {@link #open}, telling the server {@code local};
     * closes the socket if it fails.
     *
     * @throws TransportException (the handshake's typed failures) if it fails
     */
    public static Handshake.Result handshake(SocketChannel channel, TransportConfig config, Capabilities local) {
        try {
            return Handshake.client(channel.socket(), config, local);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            if (e instanceof TransportException t) {
                throw t;
            }
            throw new TransportException(
                    "handshake with " + channel.socket().getRemoteSocketAddress() + " failed: " + e, e);
        }
    }

    /** A connected, configured, blocking socket to {@code scheme://host:port}. */
    public static SocketChannel open(String scheme, String address, TransportConfig config) {
        InetSocketAddress target = parse(scheme, address);
        SocketChannel channel = null;
        try {
            channel = SocketChannel.open();
            configure(channel);
            channel.socket().connect(target, (int)
                    Math.min(Integer.MAX_VALUE, config.connectTimeout().toMillis()));
        } catch (SocketTimeoutException e) {
            closeQuietly(channel);
            throw new TransportTimeoutException(
                    "connecting to " + address + " took longer than " + config.connectTimeout(), e);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new TransportException("cannot connect to " + address + ": " + e.getMessage(), e);
        }
        return channel;
    }

    /** The options of every socket of ours, both ends: no Nagle delay (headers and small messages go at once). */
    static void configure(SocketChannel channel) throws IOException {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }

    /** Closes {@code channel} (if not {@code null}), ignoring a failure. */
    public static void closeQuietly(Channel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing more to free
            }
        }
    }

    /**
     * The socket address of {@code scheme://host:port}.
     *
     * @throws TransportException if {@code address} is not of that form
     */
    public static InetSocketAddress parse(String scheme, String address) {
        String prefix = scheme + "://";
        if (!address.startsWith(prefix)) {
            throw new TransportException(
                    "not a " + scheme + " address: '" + address + "' (expected: " + prefix + "host:port)");
        }
        String rest = address.substring(prefix.length());
        int colon = rest.lastIndexOf(':');
        if (colon <= 0) {
            throw new TransportException(
                    "not a " + scheme + " address: '" + address + "' (expected: " + prefix + "host:port)");
        }
        String host = rest.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        try {
            return new InetSocketAddress(host, Integer.parseInt(rest.substring(colon + 1)));
        } catch (IllegalArgumentException e) {
            throw new TransportException("not a " + scheme + " address: '" + address + "': " + e.getMessage(), e);
        }
    }
}
