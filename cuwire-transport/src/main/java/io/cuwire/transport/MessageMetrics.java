package io.cuwire.transport;

import io.cuwire.memory.MemoryKind;
import java.time.Duration;

/**
 * What one message cost, on one side: returned by the send future and with every received message, and recorded as
 * a JFR event ({@code io.cuwire.transport.Message}).
 *
 * <p>The copy counts come from a {@link io.cuwire.memory.TransferScope} open while the transport worked on the
 * message. Scopes are process-wide windows: copies made by other threads meanwhile (another connection, the
 * application) are counted too. On an otherwise quiet process they are exactly the message's staging copies.
 *
 * @param direction sent or received
 * @param transport the transport's name ({@code tcp}, {@code inproc})
 * @param frames number of frames
 * @param headerBytes length of the encoded header
 * @param hostFrameBytes bytes of {@link MemoryKind#HOST} frames
 * @param pinnedFrameBytes bytes of {@link MemoryKind#PINNED} frames
 * @param deviceFrameBytes bytes of {@link MemoryKind#DEVICE} frames
 * @param nanos sender: from {@code send} to the future's completion (queueing included); receiver: from the
 *     message's first byte to its last
 * @param deviceToHostBytes bytes the copy engine moved device to host meanwhile (staging on a sender)
 * @param hostToDeviceBytes bytes the copy engine moved host to device meanwhile (staging on a receiver)
 * @param mappingsOpened the peer's allocations this side opened (mapped) for the message: CUDA IPC's receiver, 0 when
 *     every one it needed was mapped already ({@link io.cuwire.memory.Device#openHandle}); 0 on every other transport
 *     and side
 */
public record MessageMetrics(
        Direction direction,
        String transport,
        int frames,
        long headerBytes,
        long hostFrameBytes,
        long pinnedFrameBytes,
        long deviceFrameBytes,
        long nanos,
        long deviceToHostBytes,
        long hostToDeviceBytes,
        long mappingsOpened) {
    /** Which side of the message these metrics describe. */
    public enum Direction {
        SENT,
        RECEIVED
    }

    /** Bytes of frames of {@code kind}. */
    public long frameBytes(MemoryKind kind) {
        return switch (kind) {
            case HOST -> hostFrameBytes;
            case PINNED -> pinnedFrameBytes;
            case DEVICE -> deviceFrameBytes;
        };
    }

    /** Bytes of all frames. */
    public long frameBytes() {
        return hostFrameBytes + pinnedFrameBytes + deviceFrameBytes;
    }

    /** Header plus frames. */
    public long totalBytes() {
        return headerBytes + frameBytes();
    }

    /** {@link #nanos} as a duration. */
    public Duration duration() {
        return Duration.ofNanos(nanos);
    }

    /** Header plus frames per second, in GB/s (10^9 bytes). */
    public double gigabytesPerSecond() {
        return nanos == 0 ? 0 : totalBytes() / (double) nanos;
    }
}
