package io.cuwire.transport.internal;

import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.msgpack.MsgpackException;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import io.cuwire.transport.AuthenticationException;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The handshake every connection starts with, the same over every transport (protocol version 2). The client
 * speaks first, and each side checks the peer's proof before it sends its own:
 * <ol>
 *   <li>client hello: protocol magic and version, role {@code client}, a fresh random 32-byte challenge, and
 *       {@code server}: the server's endpoint as the client reached it ({@code 127.0.0.1:4000}, {@code [::1]:4000},
 *       {@code inproc://name}); over TLS ({@code tcp://} with {@link io.cuwire.transport.TlsMode}) also
 *       {@code tls}: the TLS session's exporter value (RFC 8446, label {@code EXPORTER-cuwire-handshake}, 32 bytes),
 *       binding the handshake to the TLS channel it runs in;</li>
 *   <li>server hello: magic, version, role {@code server}, its own fresh challenge; sent only if the client's hello
 *       is of this protocol and names this connection's own endpoint, so a relay that passes a client's hello on to
 *       another listener is refused; over TLS with its own {@code tls} value. Each side refuses a hello whose
 *       {@code tls} value is not its own channel's (or that has one where its connection is plaintext): a relay that
 *       terminates TLS has a different channel on each side, and since the value is in the transcript, rewriting it
 *       breaks the proofs;</li>
 *   <li>client proof: {@code HMAC-SHA256(secret, "cuwire-proof-v2" 0 "client" 0 SHA-256(transcript))}, the
 *       transcript being the two hellos as they crossed ({@code [length: int32][bytes]} each): both challenges, both
 *       roles, the server's endpoint;</li>
 *   <li>server proof, sent only after the client's proof was checked, over the transcript that now ends with the
 *       client's proof record; the client checks it before it sends anything more;</li>
 *   <li>capabilities ({@link Capabilities}) each way, once the peer is authenticated; the connection's family chain
 *       is the client's chain less the families the server does not offer. Their {@code fv} is the header format
 *       version the side writes ({@link Serialized#FORMAT_VERSION}); both sides must write the same, and the
 *       connection then carries headers of that version only, each using only the agreed families (checked by the
 *       receiver, {@link Frames#parseHeader}).</li>
 * </ol>
 * A proof is so good for one connection only: the server's challenge keeps it from being replayed, the roles from
 * being reflected, the transcript from being spliced into another handshake, the endpoint from being relayed to
 * another listener; and a client that connected to an impostor has handed over a proof usable nowhere else. Proofs
 * are compared with {@link MessageDigest#isEqual} (constant time). A proof is empty when its side has no secret.
 *
 * <p>When both sides proved the secret, the handshake ends with the connection's {@linkplain SessionKeys session
 * keys}, derived from the secret and the transcript (both capabilities records included), with which the IPC and
 * UCX transports authenticate what they send after it; with no secret on either side there are none.
 *
 * <p>Each record is bounded (hello 1 KiB, proof 256 bytes, capabilities 64 KiB) and refused beyond before it is
 * allocated. A side that refuses its peer sends, best effort, a refusal record in place of its next record
 * ({@code {"magic", "pv", "refused": "auth" | "protocol", "reason"}}: a client of another version reads the
 * version from it) and throws {@link AuthenticationException} or {@link ProtocolViolationException}; a side that reads
 * a refusal throws the same type, naming the peer's reason. The caller closes the connection before any message
 * byte is read.
 */
public final class Handshake {
    /** The transport protocol's version (the records and message framing). */
    public static final int PROTOCOL_VERSION = 2;

    static final String MAGIC = "cuwire-transport";
    private static final byte[] PROOF_LABEL = "cuwire-proof-v2".getBytes(StandardCharsets.US_ASCII);
    private static final int CHALLENGE_BYTES = 32;
    private static final int MAX_HELLO = 1024;
    private static final int MAX_PROOF = 256;
    private static final int MAX_CAPABILITIES = 64 << 10;
    private static final int MAX_REASON_CHARS = 180;
    private static final SecureRandom RANDOM = new SecureRandom();

    private Handshake() {}

    /**
     * What the handshake established.
     *
     * @param peer the peer's capabilities
     * @param families the connection's family chain
     * @param keys the connection's session keys, when both sides proved the secret; else {@code null} (no secret on
     *     this side, or a peer without one let in by {@link TransportConfig#allowUnauthenticated()})
     */
    public record Result(Capabilities peer, List<Family> families, SessionKeys keys) {}

    /**
     * Runs the client side over a connected blocking socket, telling the server {@code local}; the server's endpoint
     * is the address the socket is connected to.
     */
    public static Result client(Socket socket, TransportConfig config, Capabilities local) {
        String peer = String.valueOf(socket.getRemoteSocketAddress());
        return run(
                new SocketRecords(socket, peer),
                config,
                true,
                local,
                endpoint(socket.getRemoteSocketAddress()),
                () -> {});
    }

    /**
     * Runs the server side over an accepted blocking socket, telling the client {@code local}; this side's endpoint
     * is the address the connection arrived at. {@code onAuthenticated} runs once the client's proof was accepted,
     * before this side proves anything; it may throw to stop the handshake.
     */
    public static Result server(Socket socket, TransportConfig config, Capabilities local, Runnable onAuthenticated) {
        String peer = String.valueOf(socket.getRemoteSocketAddress());
        return run(
                new SocketRecords(socket, peer),
                config,
                false,
                local,
                endpoint(socket.getLocalSocketAddress()),
                onAuthenticated);
    }

    /**
     * The endpoint of {@code address} as the handshake names it: the numeric host (IPv6 in brackets, without a
     * scope) and the port.
     */
    public static String endpoint(SocketAddress address) {
        if (!(address instanceof InetSocketAddress a) || a.getAddress() == null) {
            throw new IllegalArgumentException("not a resolved IP socket address: " + address);
        }
        InetAddress ip = a.getAddress();
        String host = ip.getHostAddress();
        int scope = host.indexOf('%');
        if (scope >= 0) {
            host = host.substring(0, scope);
        }
        return (ip instanceof Inet6Address ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    /**
     * Runs this side of the handshake within the configured handshake timeout.
     *
     * @param local this side's capabilities, as told to the peer
     * @param server the server's endpoint: on the client as it reached the server, on the server its own for this
     *     connection ({@link #endpoint})
     * @param onAuthenticated run once the peer's proof was accepted (on the server before it proves anything)
     */
    public static Result run(
            RecordChannel channel,
            TransportConfig config,
            boolean client,
            Capabilities local,
            String server,
            Runnable onAuthenticated) {
        return run(channel, config, client, local, server, onAuthenticated, null);
    }

    /**
     * As {@link #run(RecordChannel, TransportConfig, boolean, Capabilities, String, Runnable)}, over a channel bound
     * to {@code binding} (the TLS exporter value of the channel, {@code null} when it is plaintext).
     */
    public static Result run(
            RecordChannel channel,
            TransportConfig config,
            boolean client,
            Capabilities local,
            String server,
            Runnable onAuthenticated,
            byte[] binding) {
        long deadline = System.nanoTime() + config.handshakeTimeout().toNanos();
        MessageRecorder.prepare(); // while this waits for the peer, not in the first message
        Transcript transcript = new Transcript();
        Exchange x = new Exchange(channel, deadline, transcript);
        byte[] mine = new byte[CHALLENGE_BYTES];
        RANDOM.nextBytes(mine);
        try {
            boolean proved;
            if (client) {
                x.write(hello("client", mine, server, binding));
                checkHello(x.read(MAX_HELLO, "hello"), "server", null, binding);
                x.write(proofRecord(config.secret(), "client", transcript.hash()));
                byte[] expected = transcript.hash();
                proved = checkProof(x.read(MAX_PROOF, "proof"), config, "server", expected);
                onAuthenticated.run();
            } else {
                checkHello(x.read(MAX_HELLO, "hello"), "client", server, binding);
                x.write(hello("server", mine, null, binding));
                byte[] expected = transcript.hash();
                proved = checkProof(x.read(MAX_PROOF, "proof"), config, "client", expected);
                onAuthenticated.run();
                x.write(proofRecord(config.secret(), "server", transcript.hash()));
            }
            byte[] proofs = transcript.hash();
            byte[] capabilities = encode(local);
            channel.writeRecord(capabilities);
            Capabilities peer = decode(x.read(MAX_CAPABILITIES, "capabilities"));
            if (peer.formatVersion() != Serialized.FORMAT_VERSION) {
                throw new ProtocolViolationException("peer writes header format version " + peer.formatVersion()
                        + ", this side reads " + Serialized.FORMAT_VERSION);
            }
            SessionKeys keys = null;
            if (proved) {
                Transcript session = new Transcript();
                session.add(proofs);
                session.add(sha256(client ? capabilities : x.last));
                session.add(sha256(client ? x.last : capabilities));
                keys = SessionKeys.derive(config.secret(), session.hash(), client);
            }
            return new Result(
                    peer,
                    agree(client ? config.families() : peer.families(), client ? peer.families() : config.families()),
                    keys);
        } catch (AuthenticationException | ProtocolViolationException e) {
            if (!x.peerRefused) {
                refuse(channel, e);
            }
            throw e;
        }
    }

    /** The records one side has written and read so far, in order, as a running SHA-256. */
    private static final class Transcript {
        private final MessageDigest digest;

        Transcript() {
            try {
                digest = MessageDigest.getInstance("SHA-256");
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("SHA-256 is part of every JDK", e);
            }
        }

        void add(byte[] record) {
            byte[] length = {
                (byte) (record.length >>> 24),
                (byte) (record.length >>> 16),
                (byte) (record.length >>> 8),
                (byte) record.length
            };
            digest.update(length);
            digest.update(record);
        }

        byte[] hash() {
            try {
                return ((MessageDigest) digest.clone()).digest();
            } catch (CloneNotSupportedException e) {
                throw new IllegalStateException("the JDK's SHA-256 can be cloned", e);
            }
        }
    }

    private static byte[] sha256(byte[] bytes) {
        Transcript t = new Transcript();
        t.digest.update(bytes);
        return t.hash();
    }

    /** Reads and writes records, adding them to the transcript; a record that is a refusal throws its type. */
    private static final class Exchange {
        final RecordChannel channel;
        final long deadline;
        final Transcript transcript;
        boolean peerRefused;
        /** The last record read. */
        byte[] last;

        Exchange(RecordChannel channel, long deadline, Transcript transcript) {
            this.channel = channel;
            this.deadline = deadline;
            this.transcript = transcript;
        }

        void write(byte[] record) {
            channel.writeRecord(record);
            transcript.add(record);
        }

        Map<?, ?> read(int max, String what) {
            byte[] record = channel.readRecord(max, deadline);
            Map<?, ?> map = parse(record, what);
            if (map.get("refused") != null) {
                peerRefused = true;
                String reason = "peer refused this side: " + map.get("reason");
                if ("auth".equals(map.get("refused"))) {
                    throw new AuthenticationException(reason);
                }
                throw new ProtocolViolationException(reason);
            }
            transcript.add(record);
            last = record;
            return map;
        }
    }

    private static byte[] hello(String role, byte[] challenge, String server, byte[] binding) {
        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("magic", MAGIC);
        hello.put("pv", (long) PROTOCOL_VERSION);
        hello.put("role", role);
        hello.put("challenge", challenge);
        if (server != null) {
            hello.put("server", server);
        }
        if (binding != null) {
            hello.put("tls", binding);
        }
        return new MsgpackWriter(128).value(hello).toByteArray();
    }

    /**
     * Checks a hello of the peer, who should be in {@code role}: on the server, that it names {@code server}; that it
     * is bound to this side's TLS channel {@code binding} (none when {@code null}).
     */
    private static void checkHello(Map<?, ?> hello, String role, String server, byte[] binding) {
        if (!MAGIC.equals(hello.get("magic"))) {
            throw new ProtocolViolationException(
                    "the peer is not a cuwire transport (its first record has no " + MAGIC + " magic)");
        }
        if (!(hello.get("pv") instanceof Long pv) || pv != PROTOCOL_VERSION) {
            throw new ProtocolViolationException("peer speaks transport protocol version " + hello.get("pv")
                    + ", this side speaks " + PROTOCOL_VERSION);
        }
        if (!role.equals(hello.get("role"))) {
            throw new ProtocolViolationException(
                    "peer says it is '" + hello.get("role") + "', expected '" + role + "'");
        }
        if (!(hello.get("challenge") instanceof byte[] c) || c.length != CHALLENGE_BYTES) {
            throw new ProtocolViolationException("peer's hello has no " + CHALLENGE_BYTES + "-byte challenge");
        }
        if (server != null) {
            if (!(hello.get("server") instanceof String named)) {
                throw new ProtocolViolationException("the client's hello names no server endpoint");
            }
            if (!named.equals(server)) {
                throw new AuthenticationException("the client connected to " + named + ", but this connection "
                        + "arrived at " + server + " (a relay between them, or address translation)");
            }
        }
        Object bound = hello.get("tls");
        if (binding == null && bound != null) {
            throw new AuthenticationException("the peer's hello is bound to a TLS channel, but this connection is "
                    + "plaintext (a relay that terminates TLS between them)");
        }
        if (binding != null && !(bound instanceof byte[] b && MessageDigest.isEqual(b, binding))) {
            throw new AuthenticationException("the peer's hello is not bound to this connection's TLS channel (a relay"
                    + " that terminates TLS between them)");
        }
    }

    private static byte[] proofRecord(byte[] secret, String role, byte[] transcriptHash) {
        byte[] proof = secret == null ? new byte[0] : mac(secret, role, transcriptHash);
        return new MsgpackWriter(64).value(Map.of("proof", proof)).toByteArray();
    }

    /**
     * Checks the peer's proof record, the peer being in {@code role}, against the transcript before it.
     *
     * @return whether the peer proved this side's secret (rather than being let in without a proof)
     */
    private static boolean checkProof(Map<?, ?> record, TransportConfig config, String role, byte[] transcriptHash) {
        if (!(record.get("proof") instanceof byte[] proof)) {
            throw new ProtocolViolationException("peer's proof record has no proof");
        }
        byte[] secret = config.secret();
        if (proof.length == 0) {
            if (!config.allowUnauthenticated()) {
                throw new AuthenticationException("peer proved no cluster secret, and this side requires one");
            }
            return false;
        } else if (secret != null) {
            if (!MessageDigest.isEqual(proof, mac(secret, role, transcriptHash))) {
                throw new AuthenticationException(
                        "peer's proof of the cluster secret is wrong (or made for " + "another connection)");
            }
            return true;
        } else if (!config.allowUnauthenticated()) {
            throw new AuthenticationException("this side has no secret to check the peer's proof with");
        }
        return false;
    }

    private static List<Family> agree(List<Family> clientChain, List<Family> serverChain) {
        List<Family> agreed = new ArrayList<>();
        for (Family f : clientChain) {
            if (serverChain.contains(f)) {
                agreed.add(f);
            }
        }
        if (agreed.isEmpty()) {
            throw new ProtocolViolationException(
                    "no serializer family in common: client offers " + clientChain + ", server " + serverChain);
        }
        return agreed;
    }

    /**
     * Tells the peer why it is refused, best effort (it may be gone), with a refusal record in place of this side's
     * next record; the reason is {@code e}'s simple class name and message, cut at 180 characters.
     */
    public static void refuse(RecordChannel channel, TransportException e) {
        String reason = e.getClass().getSimpleName() + ": " + e.getMessage();
        if (reason.length() > MAX_REASON_CHARS) {
            reason = reason.substring(0, MAX_REASON_CHARS) + "...";
        }
        Map<String, Object> refusal = new LinkedHashMap<>();
        refusal.put("magic", MAGIC);
        refusal.put("pv", (long) PROTOCOL_VERSION);
        refusal.put("refused", e instanceof AuthenticationException ? "auth" : "protocol");
        refusal.put("reason", reason);
        byte[] record = new MsgpackWriter(256).value(refusal).toByteArray();
        if (record.length > MAX_PROOF) {
            refusal.put("reason", e.getClass().getSimpleName());
            record = new MsgpackWriter(256).value(refusal).toByteArray();
        }
        try {
            channel.writeRecord(record);
        } catch (RuntimeException ignored) {
            // the peer is gone: nothing to tell
        }
    }

    private static byte[] mac(byte[] secret, String proverRole, byte[] transcriptHash) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update(PROOF_LABEL);
            mac.update((byte) 0);
            mac.update(proverRole.getBytes(StandardCharsets.US_ASCII));
            mac.update((byte) 0);
            return mac.doFinal(transcriptHash);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    private static Map<?, ?> parse(byte[] record, String what) {
        try {
            MsgpackReader reader = new MsgpackReader(record, 0, record.length, 8, 1024);
            if (reader.readValue() instanceof Map<?, ?> map && !reader.hasRemaining()) {
                return map;
            }
        } catch (MsgpackException e) {
            throw new ProtocolViolationException(
                    "peer's handshake " + what + " is not valid msgpack: " + e.getMessage(), e);
        }
        throw new ProtocolViolationException("peer's handshake " + what + " is not a single map");
    }

    static byte[] encode(Capabilities c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("fv", (long) c.formatVersion());
        m.put("pid", c.pid());
        m.put("host", c.hostId());
        List<Object> devices = new ArrayList<>();
        for (Capabilities.DeviceInfo d : c.devices()) {
            devices.add(List.of(d.platform(), (long) d.ordinal(), d.name()));
        }
        m.put("devices", devices);
        m.put("transports", List.copyOf(c.transports()));
        m.put("ucxCuda", c.ucxCarriesCuda());
        List<Object> families = new ArrayList<>();
        for (Family f : c.families()) {
            families.add(f.wireName());
        }
        m.put("families", families);
        return new MsgpackWriter(512).value(m).toByteArray();
    }

    static Capabilities decode(Map<?, ?> m) {
        try {
            List<Capabilities.DeviceInfo> devices = new ArrayList<>();
            for (Object o : (List<?>) m.get("devices")) {
                List<?> d = (List<?>) o;
                devices.add(new Capabilities.DeviceInfo(
                        (String) d.get(0), ((Long) d.get(1)).intValue(), (String) d.get(2)));
            }
            List<String> transports = new ArrayList<>();
            for (Object o : (List<?>) m.get("transports")) {
                transports.add((String) o);
            }
            List<Family> families = new ArrayList<>();
            for (Object o : (List<?>) m.get("families")) {
                for (Family f : Family.values()) {
                    if (f.wireName().equals(o)) {
                        families.add(f);
                    }
                }
            }
            return new Capabilities(
                    ((Long) m.get("fv")).intValue(),
                    (Long) m.get("pid"),
                    (String) m.get("host"),
                    devices,
                    transports,
                    (Boolean) m.get("ucxCuda"),
                    families);
        } catch (ClassCastException | NullPointerException | IndexOutOfBoundsException e) {
            throw new ProtocolViolationException("peer's capabilities are malformed: " + e, e);
        }
    }
}
