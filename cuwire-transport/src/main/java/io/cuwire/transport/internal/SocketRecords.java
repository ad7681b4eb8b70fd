package io.cuwire.transport.internal;

import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.TimeUnit;

/**
 * The handshake's records over a blocking socket (a plain {@link Socket} or a {@code SocketChannel}'s adaptor in
 * blocking mode): each an int32 length and its bytes. Reads exactly what a record holds, so that the connection made
 * after the handshake finds the socket at the first byte after it; each read waits at most until the record's
 * deadline, however slowly bytes come. All it holds is the socket's streams and a 4-byte buffer: what a connection
 * costs before its peer authenticated.
 */
public final class SocketRecords implements RecordChannel {
    private final Socket socket;
    private final String peer;
    private final InputStream in;
    private final OutputStream out;
    private final byte[] length = new byte[4];

    /**
     * @throws TransportException if the socket's streams cannot be had (it is closed)
     */
    public SocketRecords(Socket socket, String peer) {
        this(socket, peer, null);
    }

    /**
     * As {@link #SocketRecords(Socket, String)}, reading through {@code in} (the socket's stream, with bytes the
     * caller peeked at pushed back) unless it is {@code null}.
     *
     * @throws TransportException if the socket's streams cannot be had (it is closed)
     */
    public SocketRecords(Socket socket, String peer, InputStream in) {
        this.socket = socket;
        this.peer = peer;
        try {
            this.in = in != null ? in : socket.getInputStream();
            this.out = socket.getOutputStream();
        } catch (IOException e) {
            throw new PeerClosedException("cannot use the socket of " + peer + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void writeRecord(byte[] record) {
        byte[] framed = new byte[4 + record.length];
        framed[0] = (byte) (record.length >>> 24);
        framed[1] = (byte) (record.length >>> 16);
        framed[2] = (byte) (record.length >>> 8);
        framed[3] = (byte) record.length;
        System.arraycopy(record, 0, framed, 4, record.length);
        try {
            out.write(framed);
            out.flush();
        } catch (IOException e) {
            throw new PeerClosedException("writing the handshake to " + peer + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public byte[] readRecord(int maxBytes, long deadlineNanos) {
        readFully(length, deadlineNanos);
        int n = (length[0] & 0xff) << 24 | (length[1] & 0xff) << 16 | (length[2] & 0xff) << 8 | length[3] & 0xff;
        if (n < 0 || n > maxBytes) {
            throw new ProtocolViolationException("peer " + peer + " sent a handshake record of " + (n & 0xffffffffL)
                    + " bytes (expected: 0.." + maxBytes + "): not a cuwire transport");
        }
        byte[] record = new byte[n];
        readFully(record, deadlineNanos);
        return record;
    }

    private void readFully(byte[] into, long deadlineNanos) {
        int off = 0;
        while (off < into.length) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw timeout(null);
            }
            int n;
            try {
                socket.setSoTimeout(Math.clamp(TimeUnit.NANOSECONDS.toMillis(left), 1, Integer.MAX_VALUE));
                n = in.read(into, off, into.length - off);
            } catch (SocketTimeoutException e) {
                throw timeout(e);
            } catch (IOException e) {
                throw new PeerClosedException("reading the handshake from " + peer + " failed: " + e.getMessage(), e);
            }
            if (n < 0) {
                throw new PeerClosedException("peer " + peer + " closed the connection during the handshake");
            }
            off += n;
        }
    }

    private TransportTimeoutException timeout(Throwable cause) {
        return new TransportTimeoutException("the handshake with " + peer + " did not finish in time", cause);
    }
}
