package io.cuwire.cluster;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A structure-aware fuzzer of the handshake ({@code docs/wire-format.md} section 9) and of the framing right after
 * it, each case on a connection of its own: a mutated client hello (a field dropped, of another type or value, the
 * record's length or shape wrong); a good hello and then a bad proof (wrong, empty, of the wrong length or type,
 * made for the other role, over another transcript, with another secret, or replayed from an earlier connection); a
 * good proof and then mutated capabilities; or a whole handshake and then a broken message record. The worker must
 * never prove anything to a peer whose proof was not right: a case that gets a server proof after a bad client proof
 * is a violation, and so is one whose good handshake the worker does not complete.
 */
final class HandshakeFuzzer {
    private static final Duration READ = Duration.ofSeconds(8);

    private final byte[] secret;
    private final byte[] otherSecret;
    /** A client proof record that authenticated an earlier connection: replayed by later cases. */
    private final AtomicReference<byte[]> replayable = new AtomicReference<>();

    /**
     * Whether the transport tags each record after the handshake with the session keys (IPC with a secret): the
     * broken message records then carry a tag, the right one (so the worker's checks behind it are reached) or a wrong
     * one (so its tag check is), never none, which a receiver would wait for until the message's deadline.
     */
    private final boolean tagged;

    HandshakeFuzzer(byte[] secret, boolean tagged) {
        this.tagged = tagged;
        this.secret = secret.clone();
        this.otherSecret = secret.clone();
        this.otherSecret[0] ^= 1;
    }

    /** What a case did, and the violation it found ({@code null}: none). */
    record Outcome(String what, String violation) {}

    /** Runs one case, drawn from {@code random}, from {@code source} against {@code target}. */
    Outcome attack(SplittableRandom random, InetSocketAddress target, String source) {
        int stage = random.nextInt(10);
        String what = "?";
        try (WireAttacker a = WireAttacker.connect(source, target)) {
            if (stage < 3) {
                what = "hello:" + badHello(random, a);
                Map<?, ?> answer = WireAttacker.map(read(a, 1024));
                if (answer != null && "server".equals(answer.get("role"))) {
                    // the mutant passed as a hello: a wrong proof must still get no proof back
                    a.writeRecord(WireAttacker.msgpack(Map.of("proof", new byte[32])));
                    return checkNoProof(what + " accepted, then a zero proof", a);
                }
                return new Outcome(what, null);
            }
            a.writeRecord(WireAttacker.msgpack(WireAttacker.hello(random, a.server)));
            Map<?, ?> serverHello = WireAttacker.map(read(a, 1024));
            if (serverHello == null || !"server".equals(serverHello.get("role"))) {
                return new Outcome("good hello", "the worker did not answer a good hello: " + serverHello);
            }
            if (stage < 6) {
                what = "proof:" + badProof(random, a);
                return checkNoProof(what, a);
            }
            byte[] proofRecord = a.clientProofRecord(secret);
            a.writeRecord(proofRecord);
            byte[] expected = WireAttacker.proof(secret, "server", a.transcriptHash());
            Map<?, ?> serverProof = WireAttacker.map(read(a, 256));
            if (serverProof == null
                    || !(serverProof.get("proof") instanceof byte[] p)
                    || !java.security.MessageDigest.isEqual(p, expected)) {
                return new Outcome("good proof", "the worker did not prove itself after a good proof: " + serverProof);
            }
            replayable.set(proofRecord);
            if (stage < 8) {
                what = "capabilities:" + badCapabilities(random, a);
                read(a, 64 << 10); // its capabilities, or nothing: either is fine
                a.awaitClosedByPeer(Duration.ofMillis(200));
                return new Outcome(what, null);
            }
            a.writeRecord(WireAttacker.msgpack(WireAttacker.capabilities()));
            if (WireAttacker.map(read(a, 64 << 10)) == null) {
                return new Outcome("good capabilities", "the worker sent no capabilities after a good handshake");
            }
            what = "framing:" + badFraming(random, a);
            return new Outcome(
                    what, a.awaitClosedByPeer(READ) ? null : "the worker kept a connection open after " + what);
        } catch (IOException e) {
            return new Outcome(what + " (" + e.getClass().getSimpleName() + ")", null); // refused, reset: fine
        }
    }

    private static byte[] read(WireAttacker a, int max) throws IOException {
        try {
            return a.readRecord(max, READ);
        } catch (SocketTimeoutException e) {
            return null;
        }
    }

    /** After a proof that is not right: the worker must refuse or close, never send a proof of its own. */
    private static Outcome checkNoProof(String what, WireAttacker a) throws IOException {
        Map<?, ?> next = WireAttacker.map(read(a, 1024));
        if (next != null && next.containsKey("proof")) {
            return new Outcome(what, "the worker proved itself to a peer whose proof was " + what);
        }
        if (next != null && next.get("refused") == null) {
            return new Outcome(what, "the worker answered " + next.keySet() + " to " + what);
        }
        return new Outcome(what, null);
    }

    private String badHello(SplittableRandom random, WireAttacker a) throws IOException {
        Map<String, Object> hello = WireAttacker.hello(random, a.server);
        int op = random.nextInt(12);
        switch (op) {
            case 0 -> {
                String key =
                        List.of("magic", "pv", "role", "challenge", "server").get(random.nextInt(5));
                hello.remove(key);
                a.writeRecord(WireAttacker.msgpack(hello));
                return "without " + key;
            }
            case 1 -> {
                hello.put(
                        "magic",
                        List.of("cuwire-transport ", "CUWIRE-TRANSPORT", "", "cuwire")
                                .get(random.nextInt(4)));
                a.writeRecord(WireAttacker.msgpack(hello));
                return "magic";
            }
            case 2 -> {
                Object pv = List.of(1L, 3L, -1L, "2", 2.0, Long.MAX_VALUE).get(random.nextInt(6));
                hello.put("pv", pv);
                a.writeRecord(WireAttacker.msgpack(hello));
                return "pv " + pv;
            }
            case 3 -> {
                Object role =
                        List.of("server", "", "Client", "client\u0000", 1L).get(random.nextInt(5));
                hello.put("role", role);
                a.writeRecord(WireAttacker.msgpack(hello));
                return "role " + role;
            }
            case 4 -> {
                int n = List.of(0, 31, 33, 512).get(random.nextInt(4));
                hello.put("challenge", random.nextBoolean() ? new byte[n] : "x".repeat(32));
                a.writeRecord(WireAttacker.msgpack(hello));
                return "challenge " + n;
            }
            case 5 -> {
                String port = a.server.substring(a.server.lastIndexOf(':') + 1);
                String server = List.of(
                                "127.0.0.2:" + port,
                                "127.0.0.1:1",
                                "[::1]:" + port,
                                "",
                                "localhost:" + port,
                                "127.0.0.1:" + port + " ")
                        .get(random.nextInt(6));
                hello.put("server", server);
                a.writeRecord(WireAttacker.msgpack(hello));
                return "server '" + server + "'";
            }
            case 6 -> {
                for (int i = random.nextInt(1, 30); i > 0; i--) {
                    hello.put("x" + i, new byte[20]);
                }
                a.writeRecord(WireAttacker.msgpack(hello));
                return "extra keys";
            }
            case 7 -> {
                int length = List.of(1025, -1, Integer.MAX_VALUE, 1 << 20).get(random.nextInt(4));
                a.writeRaw(ByteBuffer.allocate(4).putInt(length).array());
                return "length " + length;
            }
            case 8 -> {
                byte[] record = WireAttacker.msgpack(hello);
                ByteArrayOutputStream b = new ByteArrayOutputStream();
                DataOutputStream d = new DataOutputStream(b);
                d.writeInt(record.length);
                d.write(record, 0, random.nextInt(record.length));
                a.writeRaw(b.toByteArray());
                a.close();
                return "cut short";
            }
            case 9 -> {
                Object shape =
                        List.of(List.of(1L, 2L), 7L, "hello", new byte[40]).get(random.nextInt(4));
                a.writeRecord(WireAttacker.msgpack(shape));
                return "not a map";
            }
            case 10 -> {
                Object deep = hello;
                for (int i = 0; i < 9; i++) {
                    deep = List.of(deep);
                }
                a.writeRecord(WireAttacker.msgpack(deep));
                return "too deep";
            }
            case 11 -> {
                byte[] junk = new byte[random.nextInt(0, 1025)];
                random.nextBytes(junk);
                a.writeRecord(junk);
                return "random " + junk.length;
            }
            default -> throw new AssertionError(op);
        }
    }

    private String badProof(SplittableRandom random, WireAttacker a) throws IOException {
        int op = random.nextInt(10);
        byte[] record;
        String what;
        switch (op) {
            case 0 -> {
                byte[] p = new byte[32];
                random.nextBytes(p);
                record = WireAttacker.msgpack(Map.of("proof", p));
                what = "random";
            }
            case 1 -> {
                record = WireAttacker.msgpack(Map.of("proof", new byte[0]));
                what = "empty";
            }
            case 2 -> {
                int n = List.of(31, 33, 200).get(random.nextInt(3));
                record = WireAttacker.msgpack(Map.of(
                        "proof", java.util.Arrays.copyOf(WireAttacker.proof(secret, "client", a.transcriptHash()), n)));
                what = "length " + n;
            }
            case 3 -> {
                Object p = List.of("proof", 0L, List.of(1L)).get(random.nextInt(3));
                record = WireAttacker.msgpack(Map.of("proof", p));
                what = "type";
            }
            case 4 -> {
                record = WireAttacker.msgpack(Map.of("proo", WireAttacker.proof(secret, "client", a.transcriptHash())));
                what = "key";
            }
            case 5 -> {
                record =
                        WireAttacker.msgpack(Map.of("proof", WireAttacker.proof(secret, "server", a.transcriptHash())));
                what = "reflected role";
            }
            case 6 -> {
                byte[] stale = WireAttacker.proof(secret, "client", new byte[32]);
                record = WireAttacker.msgpack(Map.of("proof", stale));
                what = "other transcript";
            }
            case 7 -> {
                record = WireAttacker.msgpack(
                        Map.of("proof", WireAttacker.proof(otherSecret, "client", a.transcriptHash())));
                what = "other secret";
            }
            case 8 -> {
                byte[] old = replayable.get();
                record = old != null ? old : WireAttacker.msgpack(Map.of("proof", new byte[32]));
                what = old != null ? "replayed" : "zero";
            }
            case 9 -> {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("proof", WireAttacker.proof(secret, "client", a.transcriptHash()));
                m.put("pad", new byte[300]);
                record = WireAttacker.msgpack(m);
                what = "record beyond 256 bytes";
            }
            default -> throw new AssertionError(op);
        }
        a.writeRecord(record);
        return what;
    }

    private String badCapabilities(SplittableRandom random, WireAttacker a) throws IOException {
        Map<String, Object> caps = WireAttacker.capabilities();
        int op = random.nextInt(8);
        String what;
        switch (op) {
            case 0 -> {
                String key = new ArrayList<>(caps.keySet()).get(random.nextInt(caps.size()));
                caps.remove(key);
                what = "without " + key;
            }
            case 1 -> {
                Object fv = List.of(1L, 3L, "2", -1L).get(random.nextInt(4));
                caps.put("fv", fv);
                what = "fv " + fv;
            }
            case 2 -> {
                Object pid = List.of(-1L, 0L, 1L, "1", Long.MAX_VALUE).get(random.nextInt(5));
                caps.put("pid", pid);
                what = "pid " + pid;
            }
            case 3 -> {
                Object host = List.of("", "elsewhere/boot", 7L).get(random.nextInt(3));
                caps.put("host", host);
                what = "host " + host;
            }
            case 4 -> {
                Object devices = List.of(
                                List.of(List.of()),
                                List.of(List.of(1L, 2L, 3L)),
                                "gpu",
                                List.of(List.of("emulated", Long.MAX_VALUE, "x")))
                        .get(random.nextInt(4));
                caps.put("devices", devices);
                what = "devices";
            }
            case 5 -> {
                Object families = List.of(List.of(), List.of("pickle"), List.of(1L), List.of("java"), "cuda")
                        .get(random.nextInt(5));
                caps.put("families", families);
                what = "families " + families;
            }
            case 6 -> {
                caps.put("pad", new byte[(64 << 10) + 1]);
                what = "record beyond 64 KiB";
            }
            case 7 -> {
                caps.put(random.nextBoolean() ? "ucxCuda" : "transports", random.nextBoolean() ? "yes" : null);
                what = "types";
            }
            default -> throw new AssertionError(op);
        }
        a.writeRecord(WireAttacker.msgpack(caps));
        return what;
    }

    private String badFraming(SplittableRandom random, WireAttacker a) throws IOException {
        a.drain();
        int op = random.nextInt(5);
        if (tagged) {
            return badTaggedFraming(random, a, op);
        }
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        String what;
        switch (op) {
            case 0 -> {
                int type = List.of(0, 3, 7, 255, 2).get(random.nextInt(5));
                d.writeByte(type);
                d.writeInt(0);
                what = "record type " + type;
            }
            case 1 -> {
                int length = List.of(-1, (16 << 20) + 1, Integer.MAX_VALUE, Integer.MIN_VALUE)
                        .get(random.nextInt(4));
                d.writeByte(WireAttacker.MESSAGE);
                d.writeInt(length);
                what = "header length " + length;
            }
            case 2 -> {
                d.writeByte(WireAttacker.MESSAGE);
                d.writeInt(0);
                what = "empty header";
            }
            case 3 -> {
                d.writeByte(WireAttacker.MESSAGE);
                d.writeInt(100);
                d.write(new byte[10]);
                a.writeRaw(b.toByteArray());
                a.close();
                return "header cut short";
            }
            case 4 -> {
                byte[] junk = new byte[random.nextInt(1, 200)];
                random.nextBytes(junk);
                d.writeByte(WireAttacker.MESSAGE);
                d.writeInt(junk.length);
                d.write(junk);
                what = "random header";
            }
            default -> throw new AssertionError(op);
        }
        a.writeRaw(b.toByteArray());
        return what;
    }

    /** As {@link #badFraming}, each record followed by its tag: the right one, or (one case in three) a wrong one. */
    private String badTaggedFraming(SplittableRandom random, WireAttacker a, int op) throws IOException {
        boolean wrong = random.nextInt(3) == 0;
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        String what;
        switch (op) {
            case 0 -> {
                // 0, 7, 255: no such record (refused at its type); 2: a consumed record nobody asked for, tag wrong
                int type = List.of(0, 7, 255, 2, 2).get(random.nextInt(5));
                b.write(type);
                b.writeBytes(type == 2 ? random16(random) : new byte[4]);
                return writeTagged(a, b, "record type " + type);
            }
            case 1 -> {
                int length = List.of(-1, (16 << 20) + 1, Integer.MAX_VALUE, Integer.MIN_VALUE)
                        .get(random.nextInt(4));
                what = "header length " + length;
                tagged(a, b, prefix(length), 0, wrong, random);
            }
            case 2 -> {
                what = "empty header";
                tagged(a, b, prefix(0), 0, wrong, random);
                tagged(a, b, new byte[0], 1, false, random); // the (empty) header's own tag
            }
            case 3 -> {
                tagged(a, b, prefix(100), 0, wrong, random);
                b.writeBytes(new byte[10]);
                a.writeRaw(b.toByteArray());
                a.close();
                return "tagged header cut short" + (wrong ? ", prefix tag wrong" : "");
            }
            case 4 -> {
                byte[] junk = new byte[random.nextInt(1, 200)];
                random.nextBytes(junk);
                what = "random header";
                tagged(a, b, prefix(junk.length), 0, wrong, random);
                tagged(a, b, junk, 1, false, random);
            }
            default -> throw new AssertionError(op);
        }
        return writeTagged(a, b, what + (wrong ? ", tag wrong" : ""));
    }

    private static String writeTagged(WireAttacker a, ByteArrayOutputStream b, String what) throws IOException {
        a.writeRaw(b.toByteArray());
        return "tagged " + what;
    }

    private static byte[] prefix(int headerLength) {
        return java.nio.ByteBuffer.allocate(5)
                .put((byte) WireAttacker.MESSAGE)
                .putInt(headerLength)
                .array();
    }

    private void tagged(
            WireAttacker a, ByteArrayOutputStream b, byte[] covered, long seq, boolean wrong, SplittableRandom random) {
        b.writeBytes(covered);
        b.writeBytes(wrong ? random16(random) : a.sessionTag(secret, seq, covered));
    }

    private static byte[] random16(SplittableRandom random) {
        byte[] t = new byte[16];
        random.nextBytes(t);
        return t;
    }
}
