package io.cuwire.cluster;

/**
 * What the client sent to and received from all workers so far.
 *
 * @param messages messages sent
 * @param frames frames sent
 * @param headerBytes header bytes sent
 * @param frameBytes frame bytes sent
 * @param bytesReceived header and frame bytes received
 */
public record WireStats(long messages, long frames, long headerBytes, long frameBytes, long bytesReceived) {
    /** Bytes sent, headers and frames. */
    public long bytesSent() {
        return headerBytes + frameBytes;
    }

    /** The difference from {@code earlier}. */
    public WireStats minus(WireStats earlier) {
        return new WireStats(
                messages - earlier.messages,
                frames - earlier.frames,
                headerBytes - earlier.headerBytes,
                frameBytes - earlier.frameBytes,
                bytesReceived - earlier.bytesReceived);
    }
}
