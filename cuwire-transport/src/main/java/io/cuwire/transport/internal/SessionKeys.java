package io.cuwire.transport.internal;

import io.cuwire.transport.MessageAuthenticationException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The two keys of one connection whose handshake both sides proved the secret in, one per direction, and the
 * message authentication codes the IPC and UCX transports put on what they send after the handshake.
 *
 * <p>Keys: {@code HMAC-SHA256(secret, "cuwire-session-v1" 0 role 0 transcript)}, {@code role} being the side that
 * sends with the key ({@code client} or {@code server}) and {@code transcript} the SHA-256 of the handshake's hellos
 * and proofs as they crossed, followed by the SHA-256 of the client's and of the server's capabilities record. A
 * connection's keys are its own (its challenges are fresh), so a record of another connection fails here.
 *
 * <p>Tags: {@code HMAC-SHA256(key, bytes || seq: int64)}, truncated to {@value #TAG_BYTES} bytes, {@code seq} being
 * the record's number in its direction (each direction counts from 0 the records it tags; see the transport for what
 * a record is), so a record replayed, reordered, dropped or taken from another connection fails. Tags are compared in
 * constant time ({@link MessageDigest#isEqual}).
 */
public final class SessionKeys {
    /** Bytes of every tag. */
    public static final int TAG_BYTES = 16;

    private static final byte[] LABEL = "cuwire-session-v1".getBytes(StandardCharsets.US_ASCII);
    /** One log for every connection's failures (rate-limited over all of them). */
    private static final RefusalLog LOG = new RefusalLog("message authentication");

    private final byte[] sendKey;
    private final byte[] receiveKey;

    private SessionKeys(byte[] sendKey, byte[] receiveKey) {
        this.sendKey = sendKey;
        this.receiveKey = receiveKey;
    }

    /**
     * The keys of the side that is the client if {@code client}, from the secret both proved and the transcript
     * hash described above.
     */
    static SessionKeys derive(byte[] secret, byte[] transcript, boolean client) {
        byte[] c2s = key(secret, "client", transcript);
        byte[] s2c = key(secret, "server", transcript);
        return client ? new SessionKeys(c2s, s2c) : new SessionKeys(s2c, c2s);
    }

    private static byte[] key(byte[] secret, String role, byte[] transcript) {
        Mac mac = hmac(secret);
        mac.update(LABEL);
        mac.update((byte) 0);
        mac.update(role.getBytes(StandardCharsets.US_ASCII));
        mac.update((byte) 0);
        return mac.doFinal(transcript);
    }

    /** The tags of what this side sends to {@code peer}; one thread (or lock) at a time. */
    public Direction sending(String peer) {
        return new Direction(sendKey, peer);
    }

    /** The checks of what {@code peer} sends this side; one thread (or lock) at a time. */
    public Direction receiving(String peer) {
        return new Direction(receiveKey, peer);
    }

    private static Mac hmac(byte[] key) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    /**
     * HMAC-SHA256 (RFC 2104) whose key's inner and outer pad blocks are hashed once, at construction: a tag then costs
     * the message's blocks and one more, where {@link Mac} hashes both pads again for every tag (four SHA-256 blocks
     * for a short record instead of two). The same bytes as the JDK's {@code HmacSHA256}. Safe for concurrent use:
     * each tag works on copies of the two states.
     */
    static final class PaddedHmac {
        private static final int BLOCK = 64;
        private final MessageDigest inner;
        private final MessageDigest outer;

        PaddedHmac(byte[] key) {
            byte[] k = key.length > BLOCK ? sha256().digest(key) : key;
            byte[] ipad = new byte[BLOCK];
            byte[] opad = new byte[BLOCK];
            for (int i = 0; i < BLOCK; i++) {
                byte b = i < k.length ? k[i] : 0;
                ipad[i] = (byte) (b ^ 0x36);
                opad[i] = (byte) (b ^ 0x5c);
            }
            this.inner = sha256();
            this.inner.update(ipad);
            this.outer = sha256();
            this.outer.update(opad);
        }

        /** The inner hash of a new tag, its key's pad already in: feed it the message, then {@link #finish}. */
        MessageDigest begin() {
            return copy(inner);
        }

        /** The tag of the message {@code inner} was fed. */
        byte[] finish(MessageDigest inner) {
            MessageDigest o = copy(outer);
            o.update(inner.digest());
            return o.digest();
        }

        private static MessageDigest copy(MessageDigest d) {
            try {
                return (MessageDigest) d.clone();
            } catch (CloneNotSupportedException e) {
                throw new IllegalStateException("the JDK's SHA-256 can be cloned", e);
            }
        }

        private static MessageDigest sha256() {
            try {
                return MessageDigest.getInstance("SHA-256");
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("SHA-256 is part of every JDK", e);
            }
        }
    }

    /**
     * One direction's key and record counter: {@link #seal} tags the next record, {@link #open} checks it. Not
     * thread-safe, but for {@link #sealApart} and {@link #openApart}.
     */
    public static final class Direction {
        private final String peer;
        private final PaddedHmac units;
        private long next;

        private Direction(byte[] key, String peer) {
            this.peer = peer;
            this.units = new PaddedHmac(key);
        }

        /** The tag of the next record, made of {@code parts} (read from their positions, which do not move). */
        public byte[] seal(ByteBuffer... parts) {
            return tag(units, next++, parts);
        }

        /**
         * Checks {@code tag} as the next record's over {@code parts}, before any of it is used.
         *
         * @param what what the record is, for the message
         * @throws MessageAuthenticationException if it is not that record's tag (logged, rate-limited)
         */
        public void open(byte[] tag, String what, ByteBuffer... parts) {
            check(tag, tag(units, next++, parts), what);
        }

        /** The tag of the record numbered {@code seq} by the protocol, made of {@code parts}; not counted. */
        public byte[] seal(long seq, ByteBuffer... parts) {
            return tag(units, seq, parts);
        }

        /**
         * Checks {@code tag} as the record's numbered {@code seq} by the protocol, over {@code parts}; not counted.
         *
         * @throws MessageAuthenticationException if it is not (logged, rate-limited)
         */
        public void open(long seq, byte[] tag, String what, ByteBuffer... parts) {
            check(tag, tag(units, seq, parts), what);
        }

        /**
         * The tag of a record outside the count, numbered {@code seq} by the protocol (a connection's last record);
         * safe beside the counted ones.
         */
        public byte[] sealApart(long seq, ByteBuffer... parts) {
            return tag(units, seq, parts);
        }

        /**
         * Checks a record outside the count, as {@link #sealApart} tagged it.
         *
         * @throws MessageAuthenticationException if {@code tag} is not its tag (logged, rate-limited)
         */
        public void openApart(long seq, byte[] tag, String what, ByteBuffer... parts) {
            check(tag, tag(units, seq, parts), what);
        }

        private static byte[] tag(PaddedHmac hmac, long seq, ByteBuffer... parts) {
            MessageDigest inner = hmac.begin();
            for (ByteBuffer p : parts) {
                inner.update(p.duplicate());
            }
            byte[] seqBytes = new byte[8];
            ByteBuffer.wrap(seqBytes).putLong(0, seq);
            inner.update(seqBytes);
            return Arrays.copyOf(hmac.finish(inner), TAG_BYTES);
        }

        private void check(byte[] tag, byte[] expected, String what) {
            if (!MessageDigest.isEqual(tag, expected)) {
                String reason = "the " + what + " from " + peer + " failed its message authentication code (changed"
                        + " on the way, replayed, reordered or from another connection)";
                LOG.refused(peer, reason);
                throw new MessageAuthenticationException(reason);
            }
        }
    }
}
