package io.cuwire.cluster;

import io.cuwire.serialize.Family;
import io.cuwire.serialize.msgpack.MsgpackException;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import io.cuwire.transport.Capabilities;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * One hostile connection to a worker, written from the wire format ({@code docs/wire-format.md}, sections 8 and 9)
 * and not through the transport, so that it can say anything at any point: it goes as far into the handshake as it
 * is told, proves the secret when it knows it, and then writes whatever bytes it is given. Once the handshake is
 * over, a virtual thread reads whatever the worker sends and throws it away, noting when the worker closed.
 * Loopback only: it binds to the source address it is given (127.0.0.1 … 127.0.0.9). Not thread-safe.
 */
public final class WireAttacker implements AutoCloseable {
    static final String MAGIC = "cuwire-transport";
    static final int PROTOCOL_VERSION = 2;
    /** TCP's and IPC's message record type ({@code [1][header length][header][frames]}). */
    static final int MESSAGE = 1;

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    /** The worker's endpoint as this side reached it, as the client hello names it. */
    final String server;

    private final MessageDigest transcript;
    /** Every handshake record written or read, in order (the session keys are derived from them). */
    private final List<byte[]> records = new ArrayList<>();

    private final CompletableFuture<Void> closedByPeer = new CompletableFuture<>();
    private boolean draining;

    private WireAttacker(Socket socket) throws IOException {
        this.socket = socket;
        this.in = new DataInputStream(socket.getInputStream());
        this.out = new DataOutputStream(socket.getOutputStream());
        InetSocketAddress remote = (InetSocketAddress) socket.getRemoteSocketAddress();
        this.server = remote.getAddress().getHostAddress() + ":" + remote.getPort();
        try {
            this.transcript = MessageDigest.getInstance("SHA-256");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Connects from {@code source} (an address of 127.0.0.0/8) to {@code target}, within 10 s. */
    static WireAttacker connect(String source, InetSocketAddress target) throws IOException {
        Socket s = new Socket();
        try {
            s.bind(new InetSocketAddress(InetAddress.getByName(source), 0));
            s.connect(target, 10_000);
            s.setTcpNoDelay(true);
            s.setSoTimeout(10_000);
            return new WireAttacker(s);
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /** {@code host:port} of a worker address such as {@code tcp://127.0.0.1:4000}. */
    static InetSocketAddress target(String address) {
        String hostPort = address.substring(address.indexOf("://") + 3);
        int colon = hostPort.lastIndexOf(':');
        return new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    }

    /** The port this side's socket uses (how the worker's log names it). */
    int localPort() {
        return socket.getLocalPort();
    }

    // ---------------------------------------------------------------- records

    /** Writes {@code [length: int32][record]} and adds it to the transcript. */
    void writeRecord(byte[] record) throws IOException {
        out.writeInt(record.length);
        out.write(record);
        out.flush();
        addToTranscript(record);
    }

    /** Writes {@code bytes} as they are. */
    void writeRaw(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    /**
     * Reads one handshake record of the worker (at most {@code max} bytes) within {@code timeout}, adding it to the
     * transcript; {@code null} when the worker closed the connection or reset it, or sent more than {@code max}.
     *
     * @throws SocketTimeoutException if nothing whole arrived in time
     */
    byte[] readRecord(int max, Duration timeout) throws IOException {
        socket.setSoTimeout((int) Math.max(1, timeout.toMillis()));
        try {
            int n = in.readInt();
            if (n < 0 || n > max) {
                return null;
            }
            byte[] record = new byte[n];
            in.readFully(record);
            addToTranscript(record);
            return record;
        } catch (EOFException e) {
            return null;
        } catch (SocketTimeoutException e) {
            throw e;
        } catch (IOException reset) {
            return null;
        }
    }

    private void addToTranscript(byte[] record) {
        records.add(record.clone());
        transcript.update(ByteBuffer.allocate(4).putInt(record.length).array());
        transcript.update(record);
    }

    /**
     * The tag this side (the client) puts on its record number {@code seq} after a complete handshake of which it
     * proved {@code secret}, over {@code covered}, as docs/wire-format.md section 9 (Session keys) defines it:
     * {@code HMAC-SHA256(K_client, covered || seq)} cut to 16 bytes, with {@code K_client = HMAC-SHA256(secret,
     * "cuwire-session-v1" 0 "client" 0 S)}, {@code S} the hash of the hellos' and proofs' transcript and of both
     * capabilities records. Over IPC a receiver checks such tags before it uses what they cover.
     */
    byte[] sessionTag(byte[] secret, long seq, byte[] covered) {
        if (records.size() < 6) {
            throw new IllegalStateException("no complete handshake: " + records.size() + " records");
        }
        try {
            MessageDigest t = MessageDigest.getInstance("SHA-256");
            for (byte[] r : records.subList(0, 4)) {
                lengthPrefixed(t, r);
            }
            MessageDigest session = MessageDigest.getInstance("SHA-256");
            lengthPrefixed(session, t.digest());
            lengthPrefixed(session, MessageDigest.getInstance("SHA-256").digest(records.get(4)));
            lengthPrefixed(session, MessageDigest.getInstance("SHA-256").digest(records.get(5)));
            Mac derive = Mac.getInstance("HmacSHA256");
            derive.init(new SecretKeySpec(secret, "HmacSHA256"));
            derive.update("cuwire-session-v1".getBytes(StandardCharsets.US_ASCII));
            derive.update((byte) 0);
            derive.update("client".getBytes(StandardCharsets.US_ASCII));
            derive.update((byte) 0);
            byte[] key = derive.doFinal(session.digest());
            Mac tag = Mac.getInstance("HmacSHA256");
            tag.init(new SecretKeySpec(key, "HmacSHA256"));
            tag.update(covered);
            return Arrays.copyOf(tag.doFinal(ByteBuffer.allocate(8).putLong(seq).array()), 16);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void lengthPrefixed(MessageDigest d, byte[] bytes) {
        d.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
        d.update(bytes);
    }

    /** SHA-256 of the records so far, each with its length prefix. */
    byte[] transcriptHash() {
        try {
            return ((MessageDigest) transcript.clone()).digest();
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The record as a msgpack map, or {@code null} if it is not one. */
    static Map<?, ?> map(byte[] record) {
        if (record == null) {
            return null;
        }
        try {
            return new MsgpackReader(record, 0, record.length, 8, 1024).readValue() instanceof Map<?, ?> m ? m : null;
        } catch (MsgpackException e) {
            return null;
        }
    }

    static byte[] msgpack(Object value) {
        return new MsgpackWriter(256).value(value).toByteArray();
    }

    // ---------------------------------------------------------------- the handshake, step by step

    /** A client hello as a map (to be mutated before it is written). */
    static Map<String, Object> hello(SplittableRandom random, String server) {
        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("magic", MAGIC);
        hello.put("pv", (long) PROTOCOL_VERSION);
        hello.put("role", "client");
        byte[] challenge = new byte[32];
        random.nextBytes(challenge);
        hello.put("challenge", challenge);
        hello.put("server", server);
        return hello;
    }

    /** {@code HMAC-SHA256(secret, "cuwire-proof-v2" 0 role 0 transcriptHash)}. */
    static byte[] proof(byte[] secret, String role, byte[] transcriptHash) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update("cuwire-proof-v2".getBytes(StandardCharsets.US_ASCII));
            mac.update((byte) 0);
            mac.update(role.getBytes(StandardCharsets.US_ASCII));
            mac.update((byte) 0);
            return mac.doFinal(transcriptHash);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The proof record of the client over the transcript so far. */
    byte[] clientProofRecord(byte[] secret) {
        return msgpack(Map.of("proof", proof(secret, "client", transcriptHash())));
    }

    /** This process's capabilities as the record a client sends (to be mutated before it is written). */
    static Map<String, Object> capabilities() {
        Capabilities c = Capabilities.local(List.of(ClusterTypes.families()));
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
        m.put("ucxCuda", false);
        List<Object> families = new ArrayList<>();
        for (Family f : c.families()) {
            families.add(f.wireName());
        }
        m.put("families", families);
        return m;
    }

    /**
     * The whole client side of the handshake with {@code secret}, checking the worker's proof: afterwards the
     * connection carries messages, and the worker's are drained.
     *
     * @throws IOException if the worker refused this side or went away
     */
    void authenticate(SplittableRandom random, byte[] secret) throws IOException {
        writeRecord(msgpack(hello(random, server)));
        Map<?, ?> serverHello = map(readRecord(1024, Duration.ofSeconds(10)));
        if (serverHello == null || !"server".equals(serverHello.get("role"))) {
            throw new IOException("the worker did not answer the hello: " + serverHello);
        }
        writeRecord(clientProofRecord(secret));
        byte[] expected = proof(secret, "server", transcriptHash());
        Map<?, ?> serverProof = map(readRecord(256, Duration.ofSeconds(10)));
        if (serverProof == null
                || !(serverProof.get("proof") instanceof byte[] p)
                || !MessageDigest.isEqual(p, expected)) {
            throw new IOException("the worker's proof is missing or wrong: " + serverProof);
        }
        writeRecord(msgpack(capabilities()));
        if (map(readRecord(64 << 10, Duration.ofSeconds(10))) == null) {
            throw new IOException("the worker sent no capabilities");
        }
        drain();
    }

    // ---------------------------------------------------------------- after the handshake

    /** From now on, reads and drops whatever the worker sends, on a virtual thread, until it closes. */
    void drain() throws IOException {
        if (draining) {
            return;
        }
        draining = true;
        socket.setSoTimeout(0);
        InputStream stream = in;
        Thread.ofVirtual().name("attacker-drain-" + socket.getLocalPort()).start(() -> {
            byte[] sink = new byte[64 << 10];
            try {
                while (stream.read(sink) >= 0) {
                    // dropped
                }
            } catch (IOException closed) {
                // reset by the worker, or closed by this side
            }
            closedByPeer.complete(null);
        });
    }

    /** Writes one message record: {@code [1][header length][header]} and then each frame's wire bytes in order. */
    public void sendMessage(byte[] header, List<byte[]> frames) throws IOException {
        ByteArrayOutputStream start = new ByteArrayOutputStream(5 + header.length);
        DataOutputStream d = new DataOutputStream(start);
        d.writeByte(MESSAGE);
        d.writeInt(header.length);
        d.write(header);
        out.write(start.toByteArray());
        for (byte[] f : frames) {
            out.write(f);
        }
        out.flush();
    }

    /**
     * Whether the worker closed this connection within {@code timeout} (draining, or reading handshake records
     * until the end).
     */
    boolean awaitClosedByPeer(Duration timeout) throws IOException {
        if (!draining) {
            drain();
        }
        try {
            closedByPeer.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
