package io.cuwire.transport.internal.tcp;

import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.Listener;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.Transports;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A listening TCP socket; each accepted socket runs the server side of the handshake in {@link #accept}. Transports
 * that carry their control messages over TCP (CUDA IPC) or bootstrap over it (UCX) listen with it too, making their
 * own connections.
 */
public final class TcpListener implements Listener {
    /** Makes the connection of an accepted socket, running the server side of the handshake. */
    @FunctionalInterface
    public interface Accepted {
        Connection open(SocketChannel channel, TransportConfig config);
    }

    private final ServerSocketChannel server;
    private final Accepted accepted;
    private final Selector selector;
    private final TransportConfig config;
    private final String address;
    private volatile boolean closed;

    TcpListener(InetSocketAddress bind, TransportConfig config) {
        this(Transports.TCP, bind, config, (channel, c) -> new TcpConnection(channel, c, false));
    }

    /** Listens at {@code bind}; its address reads {@code scheme://host:port}. */
    public TcpListener(String scheme, InetSocketAddress bind, TransportConfig config, Accepted accepted) {
        this.config = config;
        this.accepted = accepted;
        try {
            server = ServerSocketChannel.open();
            server.bind(bind);
            server.configureBlocking(false);
            selector = Selector.open();
            server.register(selector, SelectionKey.OP_ACCEPT);
        } catch (IOException e) {
            throw new TransportException("cannot listen at " + bind + ": " + e.getMessage(), e);
        }
        InetSocketAddress bound = (InetSocketAddress) server.socket().getLocalSocketAddress();
        String host = bound.getAddress().isAnyLocalAddress() ? "127.0.0.1" : bound.getAddress().getHostAddress();
        this.address = scheme + "://" + (host.contains(":") ? "[" + host + "]" : host) + ":"
                + bound.getPort();
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public Connection accept() {
        return accept(null);
    }

    @Override
    public Connection accept(Duration timeout) {
        long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
        SocketChannel channel;
        synchronized (this) {
            try {
                while (true) {
                    if (closed) {
                        throw new ConnectionClosedException("listener " + address + " is closed");
                    }
                    channel = server.accept();
                    if (channel != null) {
                        break;
                    }
                    long left = timeout == null ? Long.MAX_VALUE / 2 : deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new TransportTimeoutException("no peer connected to " + address + " within "
                                + timeout);
                    }
                    selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                    selector.selectedKeys().clear();
                }
                channel.configureBlocking(true);
                TcpTransport.configure(channel);
            } catch (IOException | ClosedSelectorException e) {
                if (closed) {
                    throw new ConnectionClosedException("listener " + address + " is closed", e);
                }
                throw new TransportException("accepting at " + address + " failed: " + e.getMessage(), e);
            }
        }
        return accepted.open(channel, config);
    }

    @Override
    public void close() {
        closed = true;
        try {
            selector.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        TcpTransport.closeQuietly(server);
    }

    @Override
    public String toString() {
        return "TcpListener[" + address + "]";
    }
}
