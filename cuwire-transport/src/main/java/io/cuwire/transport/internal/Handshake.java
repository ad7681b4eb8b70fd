package io.cuwire.transport.internal;

import io.cuwire.serialize.Family;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import io.cuwire.transport.AuthenticationException;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.ProtocolException;
import io.cuwire.transport.TransportConfig;
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
 * The handshake every connection starts with, the same over every transport. Three records each way, written
 * before the peer's is read, so neither side waits on the other:
 * <ol>
 *   <li>hello: protocol magic and version, role ({@code client}/{@code server}), a fresh random 32-byte
 *       challenge;</li>
 *   <li>proof: {@code HMAC-SHA256(secret, "cuwire-proof-v1" 0 role 0 peerChallenge ownChallenge)}, empty when this
 *       side has no secret. The role keeps a proof from being reflected back; the verifier's fresh challenge keeps
 *       it from being replayed. Checked with {@link MessageDigest#isEqual} (constant time);</li>
 *   <li>capabilities ({@link Capabilities}), sent only after the peer's proof was accepted; the connection's family
 *       chain is the client's chain less the families the server does not offer. Their {@code fv} is the header
 *       format version the side writes ({@link Serialized#FORMAT_VERSION}); both sides must write the same, and the
 *       connection then carries headers of that version only, each using only the agreed families (checked by the
 *       receiver, {@link Frames#parseHeader}).</li>
 * </ol>
 * Each record is bounded (1 KiB, 256 bytes, 64 KiB) and refused beyond before it is allocated. A peer that fails
 * is refused with {@link AuthenticationException} or {@link ProtocolException}; the caller closes it before any
 * message byte is read.
 */
public final class Handshake {
    /** The transport protocol's version (the records and message framing). */
    public static final int PROTOCOL_VERSION = 1;

    static final String MAGIC = "cuwire-transport";
    private static final byte[] PROOF_LABEL = "cuwire-proof-v1".getBytes(StandardCharsets.US_ASCII);
    private static final int CHALLENGE_BYTES = 32;
    private static final int MAX_HELLO = 1024;
    private static final int MAX_PROOF = 256;
    private static final int MAX_CAPABILITIES = 64 << 10;
    private static final SecureRandom RANDOM = new SecureRandom();

    private Handshake() {
    }

    /**
     * What the handshake established.
     *
     * @param peer the peer's capabilities
     * @param families the connection's family chain
     */
    public record Result(Capabilities peer, List<Family> families) {
    }

    /** Runs this side of the handshake within the configured handshake timeout. */
    public static Result run(RecordChannel channel, TransportConfig config, boolean client) {
        return run(channel, config, client, Capabilities.local(config.families()));
    }

    /** Runs this side of the handshake, telling the peer {@code local} as this side's capabilities. */
    public static Result run(RecordChannel channel, TransportConfig config, boolean client, Capabilities local) {
        long deadline = System.nanoTime() + config.handshakeTimeout().toNanos();
        MessageRecorder.prepare();  // while this waits for the peer, not in the first message
        String role = client ? "client" : "server";
        String peerRole = client ? "server" : "client";
        byte[] mine = new byte[CHALLENGE_BYTES];
        RANDOM.nextBytes(mine);

        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("magic", MAGIC);
        hello.put("pv", (long) PROTOCOL_VERSION);
        hello.put("role", role);
        hello.put("challenge", mine);
        channel.writeRecord(new MsgpackWriter(128).value(hello).toByteArray());
        Map<?, ?> peerHello = parse(channel.readRecord(MAX_HELLO, deadline), "hello");
        if (!MAGIC.equals(peerHello.get("magic"))) {
            throw new ProtocolException("the peer is not a cuwire transport (its first record has no "
                    + MAGIC + " magic)");
        }
        if (!(peerHello.get("pv") instanceof Long pv) || pv != PROTOCOL_VERSION) {
            throw new ProtocolException("peer speaks transport protocol version " + peerHello.get("pv")
                    + ", this side speaks " + PROTOCOL_VERSION);
        }
        if (!peerRole.equals(peerHello.get("role"))) {
            throw new ProtocolException("peer says it is '" + peerHello.get("role") + "', expected '" + peerRole
                    + "'");
        }
        if (!(peerHello.get("challenge") instanceof byte[] theirs) || theirs.length != CHALLENGE_BYTES) {
            throw new ProtocolException("peer's hello has no " + CHALLENGE_BYTES + "-byte challenge");
        }

        byte[] secret = config.secret();
        byte[] proof = secret == null ? new byte[0] : mac(secret, role, theirs, mine);
        channel.writeRecord(new MsgpackWriter(64).value(Map.of("proof", proof)).toByteArray());
        Map<?, ?> peerProofRecord = parse(channel.readRecord(MAX_PROOF, deadline), "proof");
        if (!(peerProofRecord.get("proof") instanceof byte[] peerProof)) {
            throw new ProtocolException("peer's proof record has no proof");
        }
        if (peerProof.length == 0) {
            if (!config.allowUnauthenticated()) {
                throw new AuthenticationException("peer proved no cluster secret, and this side requires one");
            }
        } else if (secret != null) {
            if (!MessageDigest.isEqual(peerProof, mac(secret, peerRole, mine, theirs))) {
                throw new AuthenticationException("peer's proof of the cluster secret is wrong");
            }
        } else if (!config.allowUnauthenticated()) {
            throw new AuthenticationException("this side has no secret to check the peer's proof with");
        }

        channel.writeRecord(encode(local));
        Capabilities peer = decode(parse(channel.readRecord(MAX_CAPABILITIES, deadline), "capabilities"));
        if (peer.formatVersion() != Serialized.FORMAT_VERSION) {
            throw new ProtocolException("peer writes header format version " + peer.formatVersion()
                    + ", this side reads " + Serialized.FORMAT_VERSION);
        }
        List<Family> clientChain = client ? config.families() : peer.families();
        List<Family> serverChain = client ? peer.families() : config.families();
        List<Family> agreed = new ArrayList<>();
        for (Family f : clientChain) {
            if (serverChain.contains(f)) {
                agreed.add(f);
            }
        }
        if (agreed.isEmpty()) {
            throw new ProtocolException("no serializer family in common: client offers " + clientChain
                    + ", server " + serverChain);
        }
        return new Result(peer, agreed);
    }

    private static byte[] mac(byte[] secret, String proverRole, byte[] verifierChallenge, byte[] proverChallenge) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update(PROOF_LABEL);
            mac.update((byte) 0);
            mac.update(proverRole.getBytes(StandardCharsets.US_ASCII));
            mac.update((byte) 0);
            mac.update(verifierChallenge);
            return mac.doFinal(proverChallenge);
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
        } catch (SerializationException e) {
            throw new ProtocolException("peer's handshake " + what + " is not valid msgpack: " + e.getMessage(), e);
        }
        throw new ProtocolException("peer's handshake " + what + " is not a single map");
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
                devices.add(new Capabilities.DeviceInfo((String) d.get(0), ((Long) d.get(1)).intValue(),
                        (String) d.get(2)));
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
            return new Capabilities(((Long) m.get("fv")).intValue(), (Long) m.get("pid"), (String) m.get("host"),
                    devices, transports, (Boolean) m.get("ucxCuda"), families);
        } catch (ClassCastException | NullPointerException | IndexOutOfBoundsException e) {
            throw new ProtocolException("peer's capabilities are malformed: " + e, e);
        }
    }
}
