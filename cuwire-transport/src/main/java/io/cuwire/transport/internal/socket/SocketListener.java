package io.cuwire.transport.internal.socket;

import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.Listener;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TlsMode;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.RecordChannel;
import io.cuwire.transport.internal.RefusalLog;
import io.cuwire.transport.internal.SocketRecords;
import java.io.IOException;
import java.io.PushbackInputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import javax.net.ssl.SSLContext;

/**
 * A listening socket: the server side of every transport over sockets. TCP listens with it
 * ({@link #withTls}), and so do the transports that carry their control messages over a socket (CUDA IPC) or
 * bootstrap over one (UCX), each making its own connections once the handshake is done ({@link Accepted}).
 *
 * <p>From the start one thread of the listener's accepts every connection at once and hands it to a virtual thread of
 * its own for the server side of the handshake ({@link Handshake#server}), so that no peer's handshake waits for
 * another's, nor for {@link #accept}. Until its peer authenticated, a connection holds its socket, the handshake's
 * 4-byte buffer and records (at most 1 KiB) and a parked virtual thread; the connection's buffers and threads are
 * made after ({@link Accepted#open}). Connections in their handshake are bounded, in all
 * ({@link TransportConfig#maxUnauthenticated()}) and per source address
 * ({@link TransportConfig#maxUnauthenticatedPerSource()}): one arriving at a bound closes the oldest (of that source,
 * or of all) to make room. Each must authenticate within {@link TransportConfig#handshakeTimeout()} of its arrival,
 * else the listener closes it. {@link #accept} hands out the connections whose handshake succeeded, in the order they
 * succeeded; every refused peer is logged once ({@link RefusalLog}).
 *
 * <p>A listener with a TLS layer ({@code tcp://}) tells TLS from plaintext by the first byte a client sends (a TLS
 * handshake record, {@code 0x16}, or the first byte of cuwire's hello, {@code 0x00}) and holds it to
 * {@link TransportConfig#tls()}: plaintext only from a loopback peer in {@link TlsMode#AUTO}, from none in
 * {@link TlsMode#ON}, TLS from none in {@link TlsMode#OFF}. A client refused for plaintext gets a refusal record
 * saying what to set. Its TLS key is made at the first TLS client ({@link TlsSession#serverContext}), or at the start
 * when the configuration gives a key store. Listeners of other transports (IPC, UCX) have no TLS layer.
 *
 * <p>Close policy: {@link #close} stops accepting, closes the connections still in their handshake and those
 * authenticated but not yet accepted, and makes a waiting {@code accept} throw {@link ConnectionClosedException};
 * connections already accepted live on. Thread-safe.
 */
public final class SocketListener implements Listener {
    /** Makes the connection of a socket whose peer authenticated. */
    @FunctionalInterface
    public interface Accepted {
        /**
         * The connection over {@code channel} (blocking, the handshake read to its end), whose handshake established
         * {@code handshake}; closes the channel if it fails.
         */
        Connection open(SocketChannel channel, Handshake.Result handshake, TransportConfig config);
    }

    /** Makes the connection of a socket whose peer authenticated, through {@code tls} unless {@code null}. */
    @FunctionalInterface
    public interface SecureAccepted {
        /** As {@link Accepted#open}, over {@code tls} when the peer spoke TLS, else {@code null}. */
        Connection open(SocketChannel channel, Handshake.Result handshake, TransportConfig config, TlsSession tls);
    }

    /** Bytes a client's hello may have (read before a plaintext client is refused). */
    private static final int MAX_HELLO = 1024;
    /** Connections the kernel queues for the accepting thread; it takes them as fast as they come. */
    private static final int BACKLOG = 1024;
    /** How long the accepting thread pauses after accepting failed (no file descriptor left, say). */
    private static final long ACCEPT_RETRY_MILLIS = 100;

    /** Where a connection accepted by the listener is on its way to {@link #accept}. */
    private enum Stage {
        HANDSHAKE,
        AUTHENTICATED,
        DROPPED
    }

    /** A connection in its handshake. */
    private static final class Pending {
        final SocketChannel channel;
        final String peer;
        final InetAddress source;
        final long deadline;
        Stage stage = Stage.HANDSHAKE; // guarded by the listener's lock

        Pending(SocketChannel channel, InetSocketAddress remote, long deadline) {
            this.channel = channel;
            this.peer = String.valueOf(remote);
            this.source = remote.getAddress();
            this.deadline = deadline;
        }
    }

    private final ServerSocketChannel server;
    private final Selector selector;
    private final TransportConfig config;
    private final Capabilities local;
    private final SecureAccepted accepted;
    /** Whether this listener speaks TLS (a {@code tcp://} one), and whether a peer address counts as loopback. */
    private final boolean tlsLayer;

    private final Predicate<InetAddress> loopback;
    private final Object tlsContextLock = new Object();
    private SSLContext tlsContext; // guarded by tlsContextLock; made at the first TLS client, or with a key store
    private final String address;
    private final RefusalLog refusals;
    private final long handshakeNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition authenticated = lock.newCondition();
    // guarded by lock: in their handshake, oldest first (so also the first deadline first), and the same by source
    private final LinkedHashSet<Pending> handshaking = new LinkedHashSet<>();
    private final Map<InetAddress, ArrayDeque<Pending>> bySource = new HashMap<>();
    private final ArrayDeque<Connection> ready = new ArrayDeque<>();
    private boolean closed;

    /**
     * Listens at {@code bind} with a TLS layer ({@code tcp://}): TLS or plaintext by the client's first byte, held to
     * {@link TransportConfig#tls()}, a peer counting as loopback where {@code loopback} says so.
     */
    public static SocketListener withTls(
            String scheme,
            InetSocketAddress bind,
            TransportConfig config,
            Capabilities local,
            Predicate<InetAddress> loopback,
            SecureAccepted accepted) {
        return new SocketListener(scheme, bind, config, local, accepted, true, loopback);
    }

    /**
     * Listens at {@code bind} without a TLS layer, telling peers {@code local} as this side's capabilities; its
     * address reads {@code scheme://host:port}.
     */
    public SocketListener(
            String scheme, InetSocketAddress bind, TransportConfig config, Capabilities local, Accepted accepted) {
        this(
                scheme,
                bind,
                config,
                local,
                (channel, handshake, c, tls) -> accepted.open(channel, handshake, c),
                false,
                InetAddress::isLoopbackAddress);
    }

    private SocketListener(
            String scheme,
            InetSocketAddress bind,
            TransportConfig config,
            Capabilities local,
            SecureAccepted accepted,
            boolean tlsLayer,
            Predicate<InetAddress> loopback) {
        this.config = config;
        this.local = local;
        this.accepted = accepted;
        this.tlsLayer = tlsLayer;
        this.loopback = loopback;
        if (tlsLayer && config.tls() != TlsMode.OFF && config.tlsKeyStore() != null) {
            tlsContext(); // a key store that cannot be used fails here, not at the first client
        }
        this.handshakeNanos = config.handshakeTimeout().toNanos();
        ServerSocketChannel channel = null;
        Selector accepting = null;
        try {
            channel = ServerSocketChannel.open();
            channel.bind(bind, BACKLOG);
            channel.configureBlocking(false);
            accepting = Selector.open();
            channel.register(accepting, SelectionKey.OP_ACCEPT);
        } catch (IOException e) {
            Sockets.closeQuietly(channel);
            closeQuietly(accepting);
            throw new TransportException("cannot listen at " + bind + ": " + e.getMessage(), e);
        }
        this.server = channel;
        this.selector = accepting;
        InetSocketAddress bound = (InetSocketAddress) server.socket().getLocalSocketAddress();
        String host = bound.getAddress().isAnyLocalAddress()
                ? "127.0.0.1"
                : bound.getAddress().getHostAddress();
        this.address = scheme + "://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + bound.getPort();
        this.refusals = new RefusalLog(address);
        Thread.ofPlatform().daemon().name("cuwire-accept-" + address).start(this::acceptLoop);
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public int handshaking() {
        lock.lock();
        try {
            return handshaking.size();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public Connection accept() {
        return accept(null);
    }

    @Override
    public Connection accept(Duration timeout) {
        long left = timeout == null ? Long.MAX_VALUE : timeout.toNanos();
        lock.lock();
        try {
            while (ready.isEmpty()) {
                if (closed) {
                    throw new ConnectionClosedException("listener " + address + " is closed");
                }
                if (left <= 0) {
                    throw new TransportTimeoutException("no peer connected to " + address + " within " + timeout);
                }
                if (timeout == null) {
                    authenticated.await();
                } else {
                    left = authenticated.awaitNanos(left);
                }
            }
            return ready.poll();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportException("interrupted while accepting at " + address, e);
        } finally {
            lock.unlock();
        }
    }

    // ---- the accepting thread

    private void acceptLoop() {
        while (true) {
            long wait = expire();
            try {
                selector.select(wait);
                selector.selectedKeys().clear();
                SocketChannel channel;
                while ((channel = server.accept()) != null) {
                    admit(channel);
                }
            } catch (ClosedSelectorException | IOException e) {
                if (isClosed()) {
                    return;
                }
                refusals.refused("the next peer", "accepting at " + address + " failed: " + e);
                pause();
            }
        }
    }

    private boolean isClosed() {
        lock.lock();
        try {
            return closed;
        } finally {
            lock.unlock();
        }
    }

    private static void pause() {
        try {
            Thread.sleep(ACCEPT_RETRY_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Closes the connections whose handshake deadline passed; the milliseconds until the next deadline (0: none).
     */
    private long expire() {
        List<Pending> late = new ArrayList<>();
        long wait = 0;
        lock.lock();
        try {
            long now = System.nanoTime();
            while (!handshaking.isEmpty()) {
                Pending oldest = handshaking.getFirst();
                if (oldest.deadline - now > 0) {
                    wait = Math.max(1, TimeUnit.NANOSECONDS.toMillis(oldest.deadline - now) + 1);
                    break;
                }
                drop(oldest);
                late.add(oldest);
            }
        } finally {
            lock.unlock();
        }
        for (Pending p : late) {
            Sockets.closeQuietly(p.channel);
            refusals.refused(p.peer, "no handshake within " + config.handshakeTimeout());
        }
        return wait;
    }

    /** Takes an accepted socket into its handshake, making room at the bounds by closing the oldest. */
    private void admit(SocketChannel channel) {
        Pending p;
        List<Pending> evicted = new ArrayList<>(2);
        List<String> why = new ArrayList<>(2);
        try {
            channel.configureBlocking(true);
            Sockets.configure(channel);
            p = new Pending(
                    channel, (InetSocketAddress) channel.getRemoteAddress(), System.nanoTime() + handshakeNanos);
        } catch (IOException | RuntimeException e) {
            Sockets.closeQuietly(channel); // reset before it could be looked at
            return;
        }
        lock.lock();
        try {
            if (closed) {
                Sockets.closeQuietly(channel);
                return;
            }
            ArrayDeque<Pending> same = bySource.get(p.source);
            if (same != null && same.size() >= config.maxUnauthenticatedPerSource()) {
                why.add("closed as the oldest of " + (same.size() + 1) + " connections in their handshake from "
                        + p.source.getHostAddress() + " (at most " + config.maxUnauthenticatedPerSource()
                        + " per source address)");
                Pending oldest = same.getFirst();
                drop(oldest);
                evicted.add(oldest);
            }
            if (handshaking.size() >= config.maxUnauthenticated()) {
                why.add("closed as the oldest of " + (handshaking.size() + 1) + " connections in their handshake (at"
                        + " most " + config.maxUnauthenticated() + ")");
                Pending oldest = handshaking.getFirst();
                drop(oldest);
                evicted.add(oldest);
            }
            handshaking.add(p);
            bySource.computeIfAbsent(p.source, s -> new ArrayDeque<>()).addLast(p);
        } finally {
            lock.unlock();
        }
        for (int i = 0; i < evicted.size(); i++) {
            Sockets.closeQuietly(evicted.get(i).channel);
            refusals.refused(evicted.get(i).peer, why.get(i));
        }
        Pending admitted = p;
        Thread.ofVirtual().name("cuwire-handshake-" + p.peer).start(() -> handshake(admitted));
    }

    /** Takes {@code p} out of the handshake bounds; the caller holds the lock and closes its channel. */
    private void drop(Pending p) {
        p.stage = Stage.DROPPED;
        forget(p);
    }

    private void forget(Pending p) {
        handshaking.remove(p);
        ArrayDeque<Pending> same = bySource.get(p.source);
        if (same != null) {
            same.remove(p);
            if (same.isEmpty()) {
                bySource.remove(p.source);
            }
        }
    }

    // ---- a handshake's virtual thread

    private void handshake(Pending p) {
        Connection c = null;
        try {
            if (tlsLayer) {
                c = tcpHandshake(p);
            } else {
                Handshake.Result result = Handshake.server(p.channel.socket(), config, local, () -> authenticated(p));
                c = accepted.open(p.channel, result, config, null);
            }
        } catch (RuntimeException e) {
            refused(p, e);
        } finally {
            if (c == null) {
                Sockets.closeQuietly(p.channel); // also after an Error, which goes on up
            }
        }
        if (c == null) {
            return;
        }
        lock.lock();
        try {
            if (!closed) {
                ready.add(c);
                authenticated.signal();
                return;
            }
        } finally {
            lock.unlock();
        }
        c.close();
    }

    /**
     * The server side of a {@code tcp://} connection's handshake: TLS or not, as the client's first byte says and
     * {@link TransportConfig#tls()} allows, then cuwire's handshake (inside TLS, bound to its channel).
     */
    private Connection tcpHandshake(Pending p) {
        PushbackInputStream in;
        int first;
        try {
            in = new PushbackInputStream(p.channel.socket().getInputStream(), 1);
            long left = p.deadline - System.nanoTime();
            if (left <= 0) {
                throw new TransportTimeoutException("the handshake with " + p.peer + " did not finish in time");
            }
            p.channel.socket().setSoTimeout(Math.clamp(TimeUnit.NANOSECONDS.toMillis(left), 1, Integer.MAX_VALUE));
            first = in.read();
            if (first < 0) {
                throw new PeerClosedException("peer " + p.peer + " closed the connection before " + "its handshake");
            }
            in.unread(first);
        } catch (SocketTimeoutException e) {
            throw new TransportTimeoutException("the handshake with " + p.peer + " did not finish in time", e);
        } catch (IOException e) {
            throw new PeerClosedException("reading the handshake from " + p.peer + " failed: " + e.getMessage(), e);
        }
        TlsMode mode = config.tls();
        TlsSession tls = null;
        RecordChannel records;
        if (first == TlsSession.HANDSHAKE_RECORD) {
            if (mode == TlsMode.OFF) {
                throw new ProtocolViolationException("peer " + p.peer + " began TLS, but this listener's TLS is off ("
                        + "TransportConfig.tls or -D" + TlsMode.PROPERTY + ")");
            }
            tls = TlsSession.server(p.channel, p.peer, tlsContext(), in, p.deadline);
            records = tls.records();
        } else {
            records = new SocketRecords(p.channel.socket(), p.peer, in);
            if (!mode.acceptsPlaintext(loopback.test(p.source))) {
                records.readRecord(MAX_HELLO, p.deadline); // the client's hello: refused in place of the answer
                ProtocolViolationException e = new ProtocolViolationException(
                        mode == TlsMode.ON
                                ? "TLS required (listener tls ON): set the client's TransportConfig.tls(ON) or -D"
                                        + TlsMode.PROPERTY + "=on"
                                : "TLS required from non-loopback peers (listener tls AUTO): set the client's "
                                        + "TransportConfig.tls(ON) or -D" + TlsMode.PROPERTY + "=on");
                Handshake.refuse(records, e);
                throw e;
            }
        }
        Handshake.Result result = Handshake.run(
                records,
                config,
                false,
                local,
                Handshake.endpoint(p.channel.socket().getLocalSocketAddress()),
                () -> authenticated(p),
                tls == null ? null : tls.binding());
        return accepted.open(p.channel, result, config, tls);
    }

    private SSLContext tlsContext() {
        synchronized (tlsContextLock) {
            if (tlsContext == null) {
                tlsContext = TlsSession.serverContext(config);
            }
            return tlsContext;
        }
    }

    /** Logs why the handshake of {@code p} failed, unless the listener closed it (and said why, if it had to). */
    private void refused(Pending p, RuntimeException e) {
        boolean ours;
        lock.lock();
        try {
            ours = p.stage != Stage.DROPPED && !closed;
            if (p.stage == Stage.HANDSHAKE) {
                drop(p);
            }
        } finally {
            lock.unlock();
        }
        if (ours) {
            refusals.refused(p.peer, e);
        }
    }

    /** The peer of {@code p} proved the secret: it leaves the bounds, unless the listener dropped it meanwhile. */
    private void authenticated(Pending p) {
        lock.lock();
        try {
            if (p.stage != Stage.HANDSHAKE) {
                throw new ConnectionClosedException("the listener closed " + p.peer + " during its handshake");
            }
            p.stage = Stage.AUTHENTICATED;
            forget(p);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        List<Pending> pending;
        List<Connection> unaccepted;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            pending = new ArrayList<>(handshaking);
            for (Pending p : pending) {
                drop(p);
            }
            unaccepted = new ArrayList<>(ready);
            ready.clear();
            authenticated.signalAll();
        } finally {
            lock.unlock();
        }
        closeQuietly(selector);
        Sockets.closeQuietly(server);
        for (Pending p : pending) {
            Sockets.closeQuietly(p.channel);
        }
        for (Connection c : unaccepted) {
            c.close();
        }
    }

    private static void closeQuietly(Selector s) {
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    @Override
    public String toString() {
        return "SocketListener[" + address + "]";
    }
}
