package io.cuwire.transport.internal.ucx;

import io.cuwire.transport.MessageAuthenticationException;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.internal.RecordChannel;
import io.cuwire.transport.internal.SessionKeys;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * The small TCP socket beside a UCX connection. It carries what UCX cannot before it is connected — the handshake
 * and the two workers' addresses — and then stays open as the connection's life line: a clean close sends a
 * {@code bye} with the number of messages the closing side completed, so the other side can still take those; a side
 * that refused a message of the other sends {@code refused} with its reason instead; the socket's end without either
 * means the peer died. Records are a 4-byte length and the bytes, as over the TCP transport. With session keys
 * ({@link SessionKeys}), a {@code bye} or {@code refused} ends with the tag of its bytes, numbered
 * {@value #GOODBYE_SEQ} (the last record of its side); a goodbye whose tag fails is refused as forged. Reads come from
 * one thread at a time, writes from one thread at a time; {@link #close} from any.
 */
final class Bootstrap implements RecordChannel, AutoCloseable {
    private static final int MAX_RECORD = 64 << 10;
    private static final byte BYE = 2;
    private static final byte REFUSED = 3;
    /** The number of a goodbye's tag: outside the message numbers of the UCX side. */
    static final long GOODBYE_SEQ = -1;

    /**
     * How the peer ended the connection.
     *
     * @param completedMessages for a {@code bye}, the number of messages the peer completed; else -1
     * @param refusal for a {@code refused}, the peer's reason (UTF-8); else {@code null}
     * @param forged the goodbye's tag failed ({@link SessionKeys}): what failed, else {@code null}
     */
    record Goodbye(long completedMessages, byte[] refusal, MessageAuthenticationException forged) {
        static final Goodbye DIED = new Goodbye(-1, null, null);

        boolean died() {
            return completedMessages < 0 && refusal == null && forged == null;
        }
    }

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final String peer;
    private volatile SessionKeys.Direction seal;
    private volatile SessionKeys.Direction open;

    Bootstrap(Socket socket) throws IOException {
        this.socket = socket;
        socket.setTcpNoDelay(true);
        this.in = new DataInputStream(socket.getInputStream());
        this.out = new DataOutputStream(socket.getOutputStream());
        this.peer = String.valueOf(socket.getRemoteSocketAddress());
    }

    String peer() {
        return peer;
    }

    /** Tags and checks the goodbyes with {@code keys} from now on; nothing when {@code null}. */
    void authenticate(SessionKeys keys) {
        if (keys != null) {
            seal = keys.sending(peer);
            open = keys.receiving(peer);
        }
    }

    private void writeGoodbye(byte[] r) {
        SessionKeys.Direction s = seal;
        if (s == null) {
            writeRecord(r);
            return;
        }
        byte[] tag = s.sealApart(GOODBYE_SEQ, ByteBuffer.wrap(r));
        byte[] tagged = Arrays.copyOf(r, r.length + tag.length);
        System.arraycopy(tag, 0, tagged, r.length, tag.length);
        writeRecord(tagged);
    }

    @Override
    public synchronized void writeRecord(byte[] record) {
        try {
            out.writeInt(record.length);
            out.write(record);
            out.flush();
        } catch (IOException e) {
            throw new PeerClosedException("writing to " + peer + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public byte[] readRecord(int maxBytes, long deadlineNanos) {
        try {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw new TransportTimeoutException("no record from " + peer + " in time");
            }
            socket.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left))));
            int length = in.readInt();
            if (length < 0 || length > Math.min(maxBytes, MAX_RECORD)) {
                throw new ProtocolViolationException("peer " + peer + " sent a handshake record of " + length
                        + " bytes (expected: 0.." + Math.min(maxBytes, MAX_RECORD) + "): not a cuwire transport");
            }
            byte[] record = new byte[length];
            in.readFully(record);
            return record;
        } catch (SocketTimeoutException e) {
            throw new TransportTimeoutException("no record from " + peer + " in time", e);
        } catch (EOFException e) {
            throw new PeerClosedException("peer " + peer + " closed the connection", e);
        } catch (IOException e) {
            throw new PeerClosedException("reading from " + peer + " failed: " + e.getMessage(), e);
        }
    }

    /** Tells the peer this side closes, having completed {@code completedMessages} messages. */
    void writeBye(long completedMessages) {
        byte[] r = new byte[9];
        r[0] = BYE;
        for (int i = 0; i < 8; i++) {
            r[1 + i] = (byte) (completedMessages >>> (56 - 8 * i));
        }
        writeGoodbye(r);
    }

    /** Tells the peer this side refused a message of it, and why; the last record this side sends. */
    void writeRefusal(byte[] reason) {
        byte[] r = new byte[1 + reason.length];
        r[0] = REFUSED;
        System.arraycopy(reason, 0, r, 1, reason.length);
        writeGoodbye(r);
    }

    /**
     * Waits, with no time limit, for the peer's {@code bye} or {@code refused}; {@link Goodbye#DIED} if the socket
     * ended (or broke) without one, or sent something else.
     */
    Goodbye awaitGoodbye() {
        try {
            socket.setSoTimeout(0);
            int length = in.readInt();
            SessionKeys.Direction o = open;
            int tagBytes = o == null ? 0 : SessionKeys.TAG_BYTES;
            if (length < 1 + tagBytes || length > 1 + MessageRefusedException.MAX_REASON_BYTES + tagBytes) {
                return Goodbye.DIED;
            }
            byte[] r = new byte[length];
            in.readFully(r);
            if (o != null) {
                length -= tagBytes;
                try {
                    o.openApart(
                            GOODBYE_SEQ,
                            Arrays.copyOfRange(r, length, r.length),
                            "goodbye record",
                            ByteBuffer.wrap(r, 0, length));
                } catch (MessageAuthenticationException e) {
                    return new Goodbye(-1, null, e);
                }
            }
            if (r[0] == REFUSED) {
                return new Goodbye(-1, Arrays.copyOfRange(r, 1, length), null);
            }
            if (r[0] != BYE || length != 9) {
                return Goodbye.DIED;
            }
            long n = 0;
            for (int i = 0; i < 8; i++) {
                n = (n << 8) | (r[1 + i] & 0xff);
            }
            return new Goodbye(n, null, null);
        } catch (IOException e) {
            return Goodbye.DIED;
        }
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // nothing more to free
        }
    }
}
