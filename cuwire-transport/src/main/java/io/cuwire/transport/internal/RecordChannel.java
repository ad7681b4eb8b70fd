package io.cuwire.transport.internal;

/** The small, bounded records a handshake exchanges, over whatever carries them. */
public interface RecordChannel {
    /** Sends one record. */
    void writeRecord(byte[] record);

    /**
     * Receives one record, refusing one longer than {@code maxBytes} before allocating it.
     *
     * @param deadlineNanos {@link System#nanoTime()} by which it must have arrived
     * @throws io.cuwire.transport.ProtocolViolationException if the record is longer than {@code maxBytes}
     * @throws io.cuwire.transport.TransportTimeoutException if it has not arrived by the deadline
     * @throws io.cuwire.transport.PeerClosedException if the peer went away
     */
    byte[] readRecord(int maxBytes, long deadlineNanos);
}
