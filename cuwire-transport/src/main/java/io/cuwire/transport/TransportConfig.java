package io.cuwire.transport;

import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How a side of a connection behaves: who it trusts, how much it accepts, how long it waits, where received frames
 * go. Immutable; made by {@link #builder()}.
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>setting</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@code secret}</td><td>none</td><td>the cluster secret (at least 16 bytes) proved in every
 *       handshake; required unless {@code allowUnauthenticated}</td></tr>
 *   <tr><td>{@code allowUnauthenticated}</td><td>false</td><td>accept peers that prove no secret; must be set
 *       explicitly</td></tr>
 *   <tr><td>{@code limits}</td><td>{@link Limits#DEFAULT}</td><td>header size, frame count and sizes accepted
 *       from a peer, checked before anything is allocated</td></tr>
 *   <tr><td>{@code maxBytesInFlight}</td><td>256 MiB</td><td>header and frame bytes of messages sent but not yet
 *       completed; {@code send} blocks beyond it (a single larger message is let through alone)</td></tr>
 *   <tr><td>{@code connectTimeout}</td><td>10 s</td><td>bound on a client's TCP connect</td></tr>
 *   <tr><td>{@code handshakeTimeout}</td><td>5 s</td><td>bound on the whole handshake, on either side; a listener
 *       closes a connection that has not authenticated by then, however slowly its bytes keep coming</td></tr>
 *   <tr><td>{@code maxUnauthenticated}, {@code maxUnauthenticatedPerSource}</td><td>256, 32</td><td>how many
 *       connections a listener holds in their handshake at once, in all and from one source address; at either
 *       bound the oldest such connection (of all, or of that source) is closed to make room</td></tr>
 *   <tr><td>{@code ioTimeout}</td><td>30 s</td><td>longest stall of a read or write inside a message before the
 *       connection is declared dead</td></tr>
 *   <tr><td>{@code minReceiveRate}</td><td>16 MiB/s</td><td>a received message must arrive whole within
 *       {@code ioTimeout} plus its declared bytes at this rate, counted from its first byte, however steadily its
 *       bytes come ({@link #receiveDeadlineNanos}); the socket transports (TCP, IPC) hold to it</td></tr>
 *   <tr><td>{@code receiveInto}</td><td>(required)</td><td>the {@link FrameAllocator} of received frames</td></tr>
 *   <tr><td>{@code families}</td><td>{@code cuda, host}</td><td>this side's family chain, offered in the
 *       handshake</td></tr>
 *   <tr><td>{@code stagingChunkBytes}, {@code stagingSlots}</td><td>4 MiB, 3</td><td>the pinned bounce ring
 *       through which a byte-stream transport stages device frames</td></tr>
 *   <tr><td>{@code ipcPushArenaBytes}</td><td>{@value #DEFAULT_IPC_PUSH_ARENA_BYTES} (4 MiB), or the system
 *       property {@value #IPC_PUSH_ARENA_PROPERTY}</td><td>the device memory an {@code ipc://} connection's
 *       accepting side offers its dialling peer, after the first device frame it pulled from it, to push small
 *       device frames into, so that receiving them needs no GPU work of its own (on one GPU shared by two
 *       processes, every context's GPU work waits for a context switch: a 1 KiB round trip on one H200 took
 *       99.5-141 µs with 4 MiB, 358-500 µs without); allocated by an allocator of the connection's own (named in
 *       device-memory reports), freed when the connection ended and its last loan came back; frames received into
 *       it are loans of it: that allocator accounts the arena's bytes, the receiver's frame allocator none of them;
 *       {@code 0}: the accepting side copies every frame in itself</td></tr>
 *   <tr><td>{@code tls}</td><td>{@link TlsMode#AUTO}, or the system property {@value TlsMode#PROPERTY}</td>
 *       <td>whether {@code tcp://} connections run inside TLS 1.3: by default toward and from every peer that is
 *       not a loopback address ({@link TlsMode})</td></tr>
 *   <tr><td>{@code tlsKeyStore}</td><td>none: an ephemeral EC P-256 key and self-signed certificate per
 *       listener</td><td>the key and certificate a {@code tcp://} listener presents in TLS; peers do not check it
 *       (the cluster secret's proof, bound to the TLS channel, authenticates)</td></tr>
 *   <tr><td>{@code idle}</td><td>{@link IdleStrategy#fromProperty()}: the system property
 *       {@value IdleStrategy#SPIN_PROPERTY}, else 100 µs of spin with 8+ cores, 30 µs with 4-7, none below</td>
 *       <td>how this side's receive loops and progress threads wait: spin, then park ({@link IdleStrategy})</td></tr>
 * </table>
 */
public final class TransportConfig {
    /** System property: the default {@code ipcPushArenaBytes}, in bytes. */
    public static final String IPC_PUSH_ARENA_PROPERTY = "cuwire.transport.ipcPushArenaBytes";
    /** The default {@code ipcPushArenaBytes}: 4 MiB, 64 frames of the largest size pushed. */
    public static final long DEFAULT_IPC_PUSH_ARENA_BYTES = 4L << 20;
    /** Shortest cluster secret accepted. */
    public static final int MIN_SECRET_BYTES = 16;

    private final byte[] secret;
    private final boolean allowUnauthenticated;
    private final Limits limits;
    private final long maxBytesInFlight;
    private final Duration connectTimeout;
    private final Duration handshakeTimeout;
    private final Duration ioTimeout;
    private final int maxUnauthenticated;
    private final int maxUnauthenticatedPerSource;
    private final long minReceiveRate;
    private final FrameAllocator receiveInto;
    private final List<Family> families;
    private final int stagingChunkBytes;
    private final int stagingSlots;
    private final long ipcPushArenaBytes;
    private final TlsMode tls;
    private final KeyStore tlsKeyStore;
    private final char[] tlsKeyPassword;
    private final IdleStrategy idle;

    private TransportConfig(Builder b) {
        this.secret = b.secret == null ? null : b.secret.clone();
        this.allowUnauthenticated = b.allowUnauthenticated;
        this.limits = b.limits;
        this.maxBytesInFlight = b.maxBytesInFlight;
        this.connectTimeout = b.connectTimeout;
        this.handshakeTimeout = b.handshakeTimeout;
        this.ioTimeout = b.ioTimeout;
        this.maxUnauthenticated = b.maxUnauthenticated;
        this.maxUnauthenticatedPerSource = b.maxUnauthenticatedPerSource;
        this.minReceiveRate = b.minReceiveRate;
        this.receiveInto = b.receiveInto;
        this.families = List.copyOf(b.families);
        this.stagingChunkBytes = b.stagingChunkBytes;
        this.stagingSlots = b.stagingSlots;
        this.ipcPushArenaBytes = b.ipcPushArenaBytes;
        this.tls = b.tls;
        this.tlsKeyStore = b.tlsKeyStore;
        this.tlsKeyPassword = b.tlsKeyPassword;
        this.idle = b.idle;
    }

    /**
     * A builder with the defaults above.
     *
     * @throws IllegalArgumentException if the system property {@value TlsMode#PROPERTY} names no mode, or
     *     {@value IdleStrategy#SPIN_PROPERTY} is not microseconds {@code >= 0}
     */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from this configuration. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.secret = secret;
        b.allowUnauthenticated = allowUnauthenticated;
        b.limits = limits;
        b.maxBytesInFlight = maxBytesInFlight;
        b.connectTimeout = connectTimeout;
        b.handshakeTimeout = handshakeTimeout;
        b.ioTimeout = ioTimeout;
        b.maxUnauthenticated = maxUnauthenticated;
        b.maxUnauthenticatedPerSource = maxUnauthenticatedPerSource;
        b.minReceiveRate = minReceiveRate;
        b.receiveInto = receiveInto;
        b.families = families;
        b.stagingChunkBytes = stagingChunkBytes;
        b.stagingSlots = stagingSlots;
        b.ipcPushArenaBytes = ipcPushArenaBytes;
        b.tls = tls;
        b.tlsKeyStore = tlsKeyStore;
        b.tlsKeyPassword = tlsKeyPassword;
        b.idle = idle;
        return b;
    }

    /** The cluster secret, or {@code null} when none is set. */
    public byte[] secret() {
        return secret == null ? null : secret.clone();
    }

    public boolean allowUnauthenticated() {
        return allowUnauthenticated;
    }

    public Limits limits() {
        return limits;
    }

    public long maxBytesInFlight() {
        return maxBytesInFlight;
    }

    public Duration connectTimeout() {
        return connectTimeout;
    }

    public Duration handshakeTimeout() {
        return handshakeTimeout;
    }

    public Duration ioTimeout() {
        return ioTimeout;
    }

    /** Connections a listener holds in their handshake at once, from all sources together. */
    public int maxUnauthenticated() {
        return maxUnauthenticated;
    }

    /** Connections a listener holds in their handshake at once from one source (IP) address. */
    public int maxUnauthenticatedPerSource() {
        return maxUnauthenticatedPerSource;
    }

    /** The slowest average rate, in bytes per second, at which a received message may arrive. */
    public long minReceiveRate() {
        return minReceiveRate;
    }

    /**
     * How long a message of {@code declaredBytes} (its header and frames, as its header declares them) may take to
     * arrive, from its first byte: {@link #ioTimeout()} plus the declared bytes at {@link #minReceiveRate()}. A
     * one-byte drip cannot hold a receiver, and what it allocated for the message, longer than that.
     */
    public long receiveDeadlineNanos(long declaredBytes) {
        long base = ioTimeout.toNanos();
        double transfer = Math.max(0, declaredBytes) * 1e9 / minReceiveRate;
        return transfer >= Long.MAX_VALUE - base ? Long.MAX_VALUE : base + (long) transfer;
    }

    public FrameAllocator receiveInto() {
        return receiveInto;
    }

    public List<Family> families() {
        return families;
    }

    public int stagingChunkBytes() {
        return stagingChunkBytes;
    }

    public int stagingSlots() {
        return stagingSlots;
    }

    /** The push arena an {@code ipc://} connection's accepting side offers its peer, in bytes; 0: none. */
    public long ipcPushArenaBytes() {
        return ipcPushArenaBytes;
    }

    /** Whether {@code tcp://} connections run inside TLS ({@link TlsMode}). */
    public TlsMode tls() {
        return tls;
    }

    /** The key store a {@code tcp://} listener takes its TLS key and certificate from, or {@code null}: ephemeral. */
    public KeyStore tlsKeyStore() {
        return tlsKeyStore;
    }

    /** The password of the key in {@link #tlsKeyStore()}, or {@code null} when there is none. */
    public char[] tlsKeyPassword() {
        return tlsKeyPassword == null ? null : tlsKeyPassword.clone();
    }

    /** How this side's receive loops and progress threads wait. */
    public IdleStrategy idle() {
        return idle;
    }

    /** Builds a {@link TransportConfig}; not thread-safe. */
    public static final class Builder {
        private byte[] secret;
        private boolean allowUnauthenticated;
        private Limits limits = Limits.DEFAULT;
        private long maxBytesInFlight = 256L << 20;
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Duration handshakeTimeout = Duration.ofSeconds(5);
        private Duration ioTimeout = Duration.ofSeconds(30);
        private int maxUnauthenticated = 256;
        private int maxUnauthenticatedPerSource = 32;
        private long minReceiveRate = 16L << 20;
        private FrameAllocator receiveInto;
        private List<Family> families = List.of(Family.CUDA, Family.HOST);
        private int stagingChunkBytes = 4 << 20;
        private int stagingSlots = 3;
        private long ipcPushArenaBytes = pushArenaFromProperty();
        private TlsMode tls = TlsMode.fromProperty();
        private KeyStore tlsKeyStore;
        private char[] tlsKeyPassword;
        private IdleStrategy idle = IdleStrategy.fromProperty();

        private Builder() {}

        public Builder secret(byte[] clusterSecret) {
            this.secret = clusterSecret == null ? null : clusterSecret.clone();
            return this;
        }

        public Builder allowUnauthenticated(boolean allow) {
            this.allowUnauthenticated = allow;
            return this;
        }

        public Builder limits(Limits value) {
            this.limits = Objects.requireNonNull(value, "limits");
            return this;
        }

        public Builder maxBytesInFlight(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("maxBytesInFlight: " + bytes + " (expected: > 0)");
            }
            this.maxBytesInFlight = bytes;
            return this;
        }

        public Builder connectTimeout(Duration value) {
            this.connectTimeout = positive("connectTimeout", value);
            return this;
        }

        public Builder handshakeTimeout(Duration value) {
            this.handshakeTimeout = positive("handshakeTimeout", value);
            return this;
        }

        public Builder ioTimeout(Duration value) {
            this.ioTimeout = positive("ioTimeout", value);
            return this;
        }

        /**
         * Bounds the connections a listener holds in their handshake at once: {@code total} from all sources,
         * {@code perSource} from one source address.
         *
         * @throws IllegalArgumentException unless {@code 1 <= perSource <= total}
         */
        public Builder maxUnauthenticated(int total, int perSource) {
            if (perSource < 1 || perSource > total) {
                throw new IllegalArgumentException("maxUnauthenticated(total: " + total + ", perSource: " + perSource
                        + ") (expected: 1 <= perSource <= total)");
            }
            this.maxUnauthenticated = total;
            this.maxUnauthenticatedPerSource = perSource;
            return this;
        }

        /** The slowest average rate, in bytes per second, at which a received message may arrive (see the table). */
        public Builder minReceiveRate(long bytesPerSecond) {
            if (bytesPerSecond <= 0) {
                throw new IllegalArgumentException("minReceiveRate: " + bytesPerSecond + " (expected: > 0)");
            }
            this.minReceiveRate = bytesPerSecond;
            return this;
        }

        public Builder receiveInto(FrameAllocator allocator) {
            this.receiveInto = Objects.requireNonNull(allocator, "receiveInto");
            return this;
        }

        public Builder families(Family... chain) {
            if (chain.length == 0) {
                throw new IllegalArgumentException("empty family chain");
            }
            this.families = List.of(chain);
            return this;
        }

        public Builder staging(int chunkBytes, int slots) {
            if (chunkBytes < 4096 || slots < 2) {
                throw new IllegalArgumentException("staging(chunkBytes: " + chunkBytes + ", slots: " + slots
                        + ") (expected: chunkBytes >= 4096, slots >= 2)");
            }
            this.stagingChunkBytes = chunkBytes;
            this.stagingSlots = slots;
            return this;
        }

        private static long pushArenaFromProperty() {
            String v = System.getProperty(IPC_PUSH_ARENA_PROPERTY);
            if (v == null || v.isBlank()) {
                return DEFAULT_IPC_PUSH_ARENA_BYTES;
            }
            try {
                long bytes = Long.parseLong(v.strip());
                if (bytes >= 0 && bytes <= 1L << 30) {
                    return bytes;
                }
            } catch (NumberFormatException e) {
                // refused below
            }
            throw new IllegalArgumentException(IPC_PUSH_ARENA_PROPERTY + "=" + v + " (expected: bytes, 0 to 1 GiB)");
        }

        /**
         * The device memory an {@code ipc://} connection's accepting side offers its dialling peer to push device
         * frames of up to 64 KiB into (see the class table); {@code 0} turns it off.
         *
         * @throws IllegalArgumentException if {@code bytes} is negative or over 1 GiB
         */
        public Builder ipcPushArenaBytes(long bytes) {
            if (bytes < 0 || bytes > 1L << 30) {
                throw new IllegalArgumentException("ipcPushArenaBytes: " + bytes + " (expected: 0 to 1 GiB)");
            }
            this.ipcPushArenaBytes = bytes;
            return this;
        }

        /** Whether {@code tcp://} connections run inside TLS 1.3 (see {@link TlsMode}). */
        public Builder tls(TlsMode mode) {
            this.tls = Objects.requireNonNull(mode, "tls");
            return this;
        }

        /**
         * The key and certificate a {@code tcp://} listener presents in TLS, from {@code store} (its one key entry,
         * or the one the key manager picks for the handshake's signature schemes) with {@code password}, instead of
         * an ephemeral key and self-signed certificate; {@code null} goes back to the ephemeral one. Clients do not
         * check the certificate: the cluster secret's proof, bound to the TLS channel, authenticates peers.
         */
        public Builder tlsKeyStore(KeyStore store, char[] password) {
            this.tlsKeyStore = store;
            this.tlsKeyPassword = store == null || password == null ? null : password.clone();
            return this;
        }

        /** How this side's receive loops and progress threads wait ({@link IdleStrategy#spinFor}). */
        public Builder idle(IdleStrategy strategy) {
            this.idle = Objects.requireNonNull(strategy, "idle");
            return this;
        }

        /**
         * The configuration.
         *
         * @throws IllegalStateException if no secret is set and unauthenticated peers were not explicitly allowed,
         *     the secret is shorter than {@value #MIN_SECRET_BYTES} bytes, or {@code receiveInto} is missing
         */
        public TransportConfig build() {
            if (secret == null && !allowUnauthenticated) {
                throw new IllegalStateException(
                        "no cluster secret: set secret(...) or, explicitly, " + "allowUnauthenticated(true)");
            }
            if (secret != null && secret.length < MIN_SECRET_BYTES) {
                throw new IllegalStateException(
                        "cluster secret of " + secret.length + " bytes (expected: >= " + MIN_SECRET_BYTES + ")");
            }
            if (receiveInto == null) {
                throw new IllegalStateException("no receiveInto(FrameAllocator): received frames need memory");
            }
            return new TransportConfig(this);
        }

        private static Duration positive(String what, Duration d) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + ": " + d + " (expected: > 0)");
            }
            return d;
        }
    }
}
