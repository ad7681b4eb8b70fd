package io.cuwire.transport.internal.inproc;

import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.Listener;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.internal.RefusalLog;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The listening end of {@link InProcessTransport}: a queue of connections waiting for their server side, whose
 * handshake runs in {@link #accept}; a peer that fails it is closed and logged ({@link RefusalLog}), and
 * {@code accept} waits on for the next.
 */
final class InProcessListener implements Listener {
    private static final Object CLOSED = new Object();

    private final InProcessTransport transport;
    private final String name;
    private final TransportConfig config;
    private final LinkedBlockingQueue<Object> pending = new LinkedBlockingQueue<>();
    private final RefusalLog refusals;
    private boolean closed;

    InProcessListener(InProcessTransport transport, String name, TransportConfig config) {
        this.transport = transport;
        this.name = name;
        this.config = config;
        this.refusals = new RefusalLog(address());
    }

    TransportConfig config() {
        return config;
    }

    synchronized boolean offer(InProcessConnection server) {
        if (closed) {
            return false;
        }
        pending.add(server);
        return true;
    }

    @Override
    public String address() {
        return transport.name() + "://" + name;
    }

    @Override
    public int handshaking() {
        return (int) pending.stream().filter(p -> p != CLOSED).count();
    }

    @Override
    public Connection accept() {
        return accept(null);
    }

    @Override
    public Connection accept(Duration timeout) {
        long deadline = timeout == null ? 0 : System.nanoTime() + timeout.toNanos();
        while (true) {
            Object next;
            try {
                next = timeout == null
                        ? pending.take()
                        : pending.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransportException("interrupted while accepting at " + address(), e);
            }
            if (next == null) {
                throw new TransportTimeoutException("no peer connected to " + address() + " within " + timeout);
            }
            if (next == CLOSED) {
                pending.add(CLOSED);
                throw new ConnectionClosedException("listener " + address() + " is closed");
            }
            InProcessConnection server = (InProcessConnection) next;
            try {
                server.handshake(false);
                return server;
            } catch (RuntimeException e) {
                server.close();
                refusals.refused("a peer in this process", e);
            }
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        transport.remove(name, this);
        Object o;
        while ((o = pending.poll()) != null) {
            if (o instanceof InProcessConnection c) {
                c.close();
            }
        }
        pending.add(CLOSED);
    }

    @Override
    public String toString() {
        return "InProcessListener[" + address() + "]";
    }
}
