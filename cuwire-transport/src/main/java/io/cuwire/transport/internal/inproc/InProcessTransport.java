package io.cuwire.transport.internal.inproc;

import io.cuwire.transport.Connection;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Transport;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.Transports;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Connections between two parts of one JVM ({@code inproc://name}): frames are lent to the receiver
 * ({@link io.cuwire.memory.Buffer#lend}), never copied; the handshake runs as on every transport. Each instance has
 * its own scheme and its own names.
 */
public final class InProcessTransport implements Transport {
    public static final InProcessTransport INSTANCE = new InProcessTransport(Transports.IN_PROCESS);

    private final String scheme;
    private final String prefix;
    private final ConcurrentHashMap<String, InProcessListener> listeners = new ConcurrentHashMap<>();

    /** A transport of its own names at {@code scheme://name}. */
    public InProcessTransport(String scheme) {
        this.scheme = scheme;
        this.prefix = scheme + "://";
    }

    @Override
    public String name() {
        return scheme;
    }

    @Override
    public Listener listen(String address, TransportConfig config) {
        String name = nameOf(address);
        InProcessListener listener = new InProcessListener(this, name, config);
        if (listeners.putIfAbsent(name, listener) != null) {
            throw new TransportException("address in use: " + address);
        }
        return listener;
    }

    @Override
    public Connection connect(String address, TransportConfig config) {
        InProcessListener listener = listeners.get(nameOf(address));
        if (listener == null) {
            throw new TransportException("nothing listens at " + address);
        }
        InProcessConnection client = new InProcessConnection(config, scheme, address);
        InProcessConnection server = new InProcessConnection(listener.config(), scheme, address);
        InProcessConnection.link(client, server);
        if (!listener.offer(server)) {
            throw new TransportException("nothing listens at " + address + " (listener closed)");
        }
        try {
            client.handshake(true);
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
        return client;
    }

    void remove(String name, InProcessListener listener) {
        listeners.remove(name, listener);
    }

    private String nameOf(String address) {
        if (!address.startsWith(prefix) || address.length() == prefix.length()) {
            throw new TransportException("not an in-process address: '" + address + "' (expected: " + prefix + "name)");
        }
        return address.substring(prefix.length());
    }
}
