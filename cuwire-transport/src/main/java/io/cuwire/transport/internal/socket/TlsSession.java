package io.cuwire.transport.internal.socket;

import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.internal.RecordChannel;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import javax.net.ssl.ExtendedSSLSession;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

/**
 * TLS 1.3 over one TCP socket, through the JDK's {@link SSLEngine}: first, on the blocking socket, the TLS handshake
 * ({@link #client}, {@link #server}) and cuwire's handshake records ({@link #records}); then, once the connection's
 * {@link SocketIo} made the socket non-blocking, every byte of its messages ({@link #read}, {@link #write}).
 *
 * <p>No certificate is checked: a client accepts whatever the server presents (an ephemeral self-signed one by
 * default, {@link SelfSignedCertificate}). What authenticates is cuwire's proof of the cluster secret, bound to this
 * TLS channel by {@link #binding()}, the RFC 8446 exporter value of label {@value #EXPORTER_LABEL}, which both sides'
 * hellos carry: a relay that terminates TLS itself has a different exporter value on each side, so its proofs do not
 * verify. Without a secret TLS protects against a passive observer only.
 *
 * <p>Until the peer authenticated the session holds heap buffers of one record each (and the engine); then
 * ({@link #streaming()}) ciphertext comes and goes {@value #RECORDS_PER_IO} records per system call at most, through
 * direct buffers of this session's; plaintext is unwrapped straight into the reader's destination when it has room
 * for a whole record, and wrapped straight from the writer's buffers. One thread reads and one thread writes at a
 * time (the engine allows its {@code wrap} and {@code unwrap} to run at once); a post-handshake message that needs
 * an answer (a key update) is answered by the reader under the writer's lock. Closing the socket ends the session:
 * no {@code close_notify} is sent (a peer sees the stream end, as over plain TCP). The buffers are freed by the
 * garbage collector.
 */
public final class TlsSession {
    /** The first byte of a TLS record of the handshake: what a TLS client sends first. */
    static final int HANDSHAKE_RECORD = 0x16;

    static final String EXPORTER_LABEL = "EXPORTER-cuwire-handshake";
    static final int BINDING_BYTES = 32;
    private static final String[] PROTOCOLS = {"TLSv1.3"};
    private static final int RECORDS_PER_IO = 16;
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);
    private static final SecureRandom RANDOM = new SecureRandom();

    /** Trusts every certificate: the secret's proof, bound to the channel, authenticates instead. */
    private static final X509TrustManager ANY_CERTIFICATE = new X509TrustManager() {
        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {
            // no client certificates are asked for
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {
            // not checked: see the class comment
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }
    };

    private final SocketChannel channel;
    private final SSLEngine engine;
    private final String peer;
    private final int packetBytes;
    private final int appBytes;
    /** Ciphertext read and not yet unwrapped; read mode; one record's room until {@link #streaming()}. */
    private ByteBuffer netIn;
    /** Plaintext unwrapped and not yet read; read mode. */
    private final ByteBuffer appIn;
    /** Ciphertext wrapped and not yet written; read mode; guarded by {@link #wrapLock}; as {@link #netIn}. */
    private ByteBuffer netOut;

    private final ReentrantLock wrapLock = new ReentrantLock();
    /** The socket's stream, read while the socket blocks (the handshakes). */
    private final InputStream blockingIn;

    private byte[] binding;

    private TlsSession(SocketChannel channel, SSLEngine engine, String peer, InputStream blockingIn) {
        this.channel = channel;
        this.blockingIn = blockingIn;
        this.engine = engine;
        this.peer = peer;
        this.packetBytes = engine.getSession().getPacketBufferSize();
        this.appBytes = engine.getSession().getApplicationBufferSize();
        // Heap buffers of one record each while the peer is unauthenticated: no direct memory before that.
        this.netIn = ByteBuffer.allocate(packetBytes).flip();
        this.netOut = ByteBuffer.allocate(packetBytes).flip();
        this.appIn = ByteBuffer.allocate(appBytes).flip();
    }

    /**
     * The handshakes are done and the connection's messages begin: the ciphertext buffers become direct ones of
     * {@value #RECORDS_PER_IO} records, keeping what they hold. Called once, by the connection's {@link SocketIo}
     * before any other thread uses this session.
     */
    void streaming() {
        netIn = ByteBuffer.allocateDirect(RECORDS_PER_IO * packetBytes)
                .put(netIn)
                .flip();
        wrapLock.lock();
        try {
            netOut = ByteBuffer.allocateDirect(RECORDS_PER_IO * packetBytes)
                    .put(netOut)
                    .flip();
        } finally {
            wrapLock.unlock();
        }
    }

    /**
     * A listener's TLS context: the key of {@code config}'s {@link TransportConfig#tlsKeyStore()}, or an ephemeral
     * EC P-256 key with a self-signed certificate.
     *
     * @throws TransportException if the key store's key cannot be used
     */
    static SSLContext serverContext(TransportConfig config) {
        try {
            KeyStore store = config.tlsKeyStore();
            KeyManager[] keys;
            if (store == null) {
                keys = new KeyManager[] {SelfSignedCertificate.keyManager(SelfSignedCertificate.keyPair())};
            } else {
                KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                factory.init(store, config.tlsKeyPassword());
                keys = factory.getKeyManagers();
            }
            SSLContext context = SSLContext.getInstance("TLSv1.3");
            context.init(keys, null, RANDOM);
            return context;
        } catch (GeneralSecurityException e) {
            throw new TransportException("cannot set up TLS for a listener: " + e.getMessage(), e);
        }
    }

    private static final class ClientContext {
        static final SSLContext INSTANCE;

        static {
            try {
                INSTANCE = SSLContext.getInstance("TLSv1.3");
                INSTANCE.init(null, new TrustManager[] {ANY_CERTIFICATE}, RANDOM);
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("TLS 1.3 is part of every JDK", e);
            }
        }
    }

    /**
     * Runs the client side of the TLS handshake over {@code channel} (connected, blocking) by {@code deadlineNanos}.
     *
     * @throws ProtocolViolationException if TLS failed (the peer does not speak it, or sent a bad record)
     * @throws TransportTimeoutException if it did not finish in time
     * @throws PeerClosedException if the peer went away
     */
    public static TlsSession client(SocketChannel channel, String peer, long deadlineNanos) {
        SSLEngine engine = ClientContext.INSTANCE.createSSLEngine();
        engine.setUseClientMode(true);
        return handshake(channel, engine, peer, streamOf(channel, peer), deadlineNanos);
    }

    /**
     * Runs the server side of the TLS handshake over {@code channel} (accepted, blocking), reading through {@code in}
     * (the socket's stream, with the byte peeked at pushed back) by {@code deadlineNanos}.
     *
     * @throws ProtocolViolationException if TLS failed (the peer does not speak it, or sent a bad record)
     * @throws TransportTimeoutException if it did not finish in time
     * @throws PeerClosedException if the peer went away
     */
    static TlsSession server(
            SocketChannel channel, String peer, SSLContext context, InputStream in, long deadlineNanos) {
        SSLEngine engine = context.createSSLEngine();
        engine.setUseClientMode(false);
        return handshake(channel, engine, peer, in, deadlineNanos);
    }

    private static InputStream streamOf(SocketChannel channel, String peer) {
        try {
            return channel.socket().getInputStream();
        } catch (IOException e) {
            throw new PeerClosedException("cannot use the socket of " + peer + ": " + e.getMessage(), e);
        }
    }

    private static TlsSession handshake(
            SocketChannel channel, SSLEngine engine, String peer, InputStream in, long deadlineNanos) {
        SSLParameters parameters = engine.getSSLParameters();
        parameters.setProtocols(PROTOCOLS);
        engine.setSSLParameters(parameters);
        TlsSession s = new TlsSession(channel, engine, peer, in);
        try {
            engine.beginHandshake();
            while (true) {
                switch (engine.getHandshakeStatus()) {
                    case NEED_TASK -> s.runTasks();
                    case NEED_WRAP -> s.answer();
                    case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
                        if (!s.unwrapBlocking()) {
                            s.fill(deadlineNanos, "the TLS handshake");
                        }
                    }
                    case FINISHED, NOT_HANDSHAKING -> {
                        s.binding = ((ExtendedSSLSession) engine.getSession())
                                .exportKeyingMaterialData(EXPORTER_LABEL, null, BINDING_BYTES);
                        return s;
                    }
                    default -> throw new IllegalStateException("handshake status " + engine.getHandshakeStatus());
                }
            }
        } catch (SSLException e) {
            throw new ProtocolViolationException("the TLS handshake with " + peer + " failed: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new PeerClosedException("the TLS handshake with " + peer + " failed: " + e.getMessage(), e);
        }
    }

    /** The channel binding: this session's exporter value of label {@value #EXPORTER_LABEL}, 32 bytes. */
    public byte[] binding() {
        return binding.clone();
    }

    /**
     * cuwire's handshake records ({@code [length: int32][bytes]}, as over plain TCP) inside this session, while the
     * socket is blocking.
     */
    public RecordChannel records() {
        return new RecordChannel() {
            @Override
            public void writeRecord(byte[] record) {
                ByteBuffer framed = ByteBuffer.allocate(4 + record.length)
                        .putInt(record.length)
                        .put(record)
                        .flip();
                try {
                    while (framed.hasRemaining()) {
                        write(new ByteBuffer[] {framed}, 0, 1);
                    }
                    while (pending()) {
                        write(new ByteBuffer[0], 0, 0);
                    }
                } catch (SSLException e) {
                    throw new ProtocolViolationException("TLS with " + peer + " failed: " + e.getMessage(), e);
                } catch (IOException e) {
                    throw new PeerClosedException("writing the handshake to " + peer + " failed: " + e.getMessage(), e);
                }
            }

            @Override
            public byte[] readRecord(int maxBytes, long deadlineNanos) {
                byte[] length = new byte[4];
                readBlocking(length, deadlineNanos);
                int n = (length[0] & 0xff) << 24
                        | (length[1] & 0xff) << 16
                        | (length[2] & 0xff) << 8
                        | length[3] & 0xff;
                if (n < 0 || n > maxBytes) {
                    throw new ProtocolViolationException("peer " + peer + " sent a handshake record of "
                            + (n & 0xffffffffL)
                            + " bytes (expected: 0.." + maxBytes + "): not a cuwire transport");
                }
                byte[] record = new byte[n];
                readBlocking(record, deadlineNanos);
                return record;
            }
        };
    }

    private void readBlocking(byte[] into, long deadlineNanos) {
        int off = 0;
        try {
            while (off < into.length) {
                if (appIn.hasRemaining()) {
                    int n = Math.min(appIn.remaining(), into.length - off);
                    appIn.get(into, off, n);
                    off += n;
                } else if (!unwrapBlocking()) {
                    fill(deadlineNanos, "the handshake");
                }
            }
        } catch (SSLException e) {
            throw new ProtocolViolationException("a TLS record from " + peer + " is not valid: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new PeerClosedException("reading the handshake from " + peer + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Unwraps one record into {@link #appIn} (empty) while the socket blocks; {@code false} if a whole record is not
     * in yet.
     */
    private boolean unwrapBlocking() throws IOException {
        if (!netIn.hasRemaining()) {
            return false;
        }
        SSLEngineResult r;
        appIn.compact();
        try {
            r = engine.unwrap(netIn, appIn);
        } finally {
            appIn.flip();
        }
        afterUnwrap(r);
        return switch (r.getStatus()) {
            case OK -> true;
            case BUFFER_UNDERFLOW -> false;
            case CLOSED -> throw new PeerClosedException("peer " + peer + " closed its TLS session");
            case BUFFER_OVERFLOW ->
                throw new IllegalStateException(
                        "TLS record larger than the session's " + appBytes + "-byte application buffer");
        };
    }

    /** Reads more ciphertext from the blocking socket (before streaming), waiting until {@code deadlineNanos}. */
    private void fill(long deadlineNanos, String what) throws IOException {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
            throw new TransportTimeoutException(what + " with " + peer + " did not finish in time");
        }
        Socket socket = channel.socket();
        netIn.compact(); // a heap buffer until streaming()
        try {
            socket.setSoTimeout(Math.clamp(TimeUnit.NANOSECONDS.toMillis(left), 1, Integer.MAX_VALUE));
            int n = blockingIn.read(netIn.array(), netIn.arrayOffset() + netIn.position(), netIn.remaining());
            if (n < 0) {
                throw new PeerClosedException("peer " + peer + " closed the connection during " + what);
            }
            netIn.position(netIn.position() + n);
        } catch (SocketTimeoutException e) {
            throw new TransportTimeoutException(what + " with " + peer + " did not finish in time", e);
        } finally {
            netIn.flip();
        }
    }

    private void runTasks() {
        Runnable task;
        while ((task = engine.getDelegatedTask()) != null) {
            task.run();
        }
    }

    /** Handles what an unwrap left the engine needing: its tasks, or an answer to the peer. */
    private void afterUnwrap(SSLEngineResult r) throws IOException {
        SSLEngineResult.HandshakeStatus status = r.getHandshakeStatus();
        if (status == SSLEngineResult.HandshakeStatus.NEED_TASK) {
            runTasks();
            status = engine.getHandshakeStatus();
        }
        if (status == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
            answer();
        }
    }

    /**
     * Wraps what the engine has to send of its own (handshake or post-handshake messages) and writes it: all of it
     * while the socket blocks, what the socket takes when it does not (the writer sends the rest with its next
     * bytes).
     */
    private void answer() throws IOException {
        wrapLock.lock();
        try {
            do {
                netOut.compact();
                SSLEngineResult r;
                try {
                    r = engine.wrap(EMPTY, netOut);
                } finally {
                    netOut.flip();
                }
                if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                    throw new PeerClosedException("the TLS session with " + peer + " is closed");
                }
                if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) {
                    runTasks();
                }
                if (channel.isBlocking()) {
                    while (netOut.hasRemaining()) {
                        channel.write(netOut);
                    }
                } else {
                    flushNet();
                }
            } while (engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP
                    && (channel.isBlocking() || !netOut.hasRemaining()));
        } finally {
            wrapLock.unlock();
        }
    }

    // ---- the connection's bytes (non-blocking socket)

    /**
     * Reads plaintext into {@code dst} without blocking: what is unwrapped already, then as many records as have come
     * whole and {@code dst} has room for (straight into {@code dst} while it has room for a whole record).
     *
     * @return the bytes read, 0 if no whole record is in (the socket has nothing more now), -1 at the stream's end
     * @throws SSLException if a record is not valid (tampered with, or not TLS)
     */
    int read(ByteBuffer dst) throws IOException {
        if (appIn.hasRemaining()) {
            return drain(dst);
        }
        int produced = 0;
        while (dst.hasRemaining()) {
            if (netIn.hasRemaining()) {
                boolean straight = dst.remaining() >= appBytes;
                SSLEngineResult r;
                if (straight) {
                    r = engine.unwrap(netIn, dst);
                } else {
                    appIn.clear();
                    try {
                        r = engine.unwrap(netIn, appIn);
                    } finally {
                        appIn.flip();
                    }
                }
                afterUnwrap(r);
                if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                    return produced > 0 ? produced : -1;
                }
                if (r.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW) {
                    throw new IllegalStateException(
                            "TLS record larger than the session's " + appBytes + "-byte application buffer");
                }
                if (r.getStatus() == SSLEngineResult.Status.OK && r.bytesConsumed() > 0) {
                    if (!straight) {
                        if (appIn.hasRemaining()) {
                            return produced + drain(dst);
                        }
                        continue; // a record of no application data (a session ticket): unwrap on
                    }
                    produced += r.bytesProduced();
                    continue;
                }
            }
            netIn.compact();
            int n;
            try {
                n = channel.read(netIn);
            } finally {
                netIn.flip();
            }
            if (n <= 0) {
                return n < 0 && produced == 0 ? -1 : produced;
            }
        }
        return produced;
    }

    private int drain(ByteBuffer dst) {
        int n = Math.min(appIn.remaining(), dst.remaining());
        dst.put(dst.position(), appIn, appIn.position(), n);
        dst.position(dst.position() + n);
        appIn.position(appIn.position() + n);
        return n;
    }

    /**
     * Wraps and writes what the socket takes now of the remaining bytes of {@code srcs[offset .. offset + length)},
     * after what earlier calls wrapped but could not write; with no bytes given, only the latter. Ciphertext of the
     * bytes taken may still wait here ({@link #pending()}) when the socket is full.
     *
     * @return a measure of progress: more than 0 if any byte was taken or written, 0 if the socket took nothing
     */
    long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        wrapLock.lock();
        try {
            long progress = flushNet();
            while (!netOut.hasRemaining() && remaining(srcs, offset, length)) {
                netOut.compact();
                try {
                    while (netOut.remaining() >= packetBytes) {
                        SSLEngineResult r = engine.wrap(srcs, offset, length, netOut);
                        if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                            throw new PeerClosedException("the TLS session with " + peer + " is closed");
                        }
                        progress += r.bytesConsumed();
                        SSLEngineResult.HandshakeStatus status = r.getHandshakeStatus();
                        if (status == SSLEngineResult.HandshakeStatus.NEED_TASK) {
                            runTasks();
                            status = engine.getHandshakeStatus();
                        }
                        // a key update of this side's (at the key's usage limit) goes out before the bytes after it
                        boolean more = status == SSLEngineResult.HandshakeStatus.NEED_WRAP;
                        if (r.getStatus() != SSLEngineResult.Status.OK || !more && !remaining(srcs, offset, length)) {
                            break;
                        }
                    }
                } finally {
                    netOut.flip();
                }
                long written = flushNet();
                progress += written;
                if (written == 0) {
                    break;
                }
            }
            return progress;
        } finally {
            wrapLock.unlock();
        }
    }

    /** Whether ciphertext waits to be written ({@link #write} with no bytes writes it). Writer only. */
    boolean pending() {
        wrapLock.lock();
        try {
            return netOut.hasRemaining();
        } finally {
            wrapLock.unlock();
        }
    }

    /** Writes what the socket takes now of the ciphertext still waiting, if the writer is not writing. */
    void flushQuietly() throws IOException {
        if (wrapLock.tryLock()) {
            try {
                flushNet();
            } finally {
                wrapLock.unlock();
            }
        }
    }

    /** Writes what the socket takes of {@link #netOut}; the caller holds {@link #wrapLock}. */
    private long flushNet() throws IOException {
        long written = 0;
        while (netOut.hasRemaining()) {
            int n = channel.write(netOut);
            if (n == 0) {
                break;
            }
            written += n;
        }
        return written;
    }

    private static boolean remaining(ByteBuffer[] srcs, int offset, int length) {
        for (int i = offset; i < offset + length; i++) {
            if (srcs[i].hasRemaining()) {
                return true;
            }
        }
        return false;
    }
}
