package io.cuwire.transport.internal;

import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.TransferScope;
import io.cuwire.transport.MessageMetrics;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Measures one message while a transport works on it: its time, the copies made meanwhile (a
 * {@link TransferScope}, when asked for), and the JFR event it commits. One per message; not thread-safe.
 */
public final class MessageRecorder implements AutoCloseable {
    private static final AtomicBoolean PREPARED = new AtomicBoolean();

    private final MessageMetrics.Direction direction;
    private final String transport;
    private final long startNanos;
    private final TransferScope scope;
    private final MessageEvent event = new MessageEvent();

    private MessageRecorder(
            MessageMetrics.Direction direction, String transport, long startNanos, boolean countCopies) {
        this.direction = direction;
        this.transport = transport;
        this.startNanos = startNanos;
        this.scope = countCopies ? CopyEngine.openScope(transport + " " + direction) : null;
        event.begin();
    }

    /**
     * Readies the JFR event machinery on a thread of its own, once per process: the first JFR event a JVM makes costs
     * 150-280 ms on the 2-core VMs (JFR sets itself up and instruments the event class, recording or not), which a
     * connection's first message would otherwise wait for on both sides. Called as a connection begins.
     */
    public static void prepare() {
        if (PREPARED.compareAndSet(false, true)) {
            Thread.ofPlatform().daemon().name("cuwire-jfr-prepare").start(() -> {
                MessageEvent e = new MessageEvent();
                e.begin();
                e.end();
            });
        }
    }

    /** Starts measuring now (or from {@code startNanos}), counting copies when {@code countCopies}. */
    public static MessageRecorder start(
            MessageMetrics.Direction direction, String transport, long startNanos, boolean countCopies) {
        return new MessageRecorder(direction, transport, startNanos, countCopies);
    }

    /**
     * The metrics of a message of {@code headerBytes} and frames of {@code kinds} and {@code lengths}; commits the
     * event and stops counting.
     */
    public MessageMetrics finish(long headerBytes, List<MemoryKind> kinds, List<Long> lengths) {
        return finish(headerBytes, kinds, lengths, 0);
    }

    /** As {@link #finish(long, List, List)}, for a message that had {@code mappingsOpened} of the peer's opened. */
    public MessageMetrics finish(long headerBytes, List<MemoryKind> kinds, List<Long> lengths, long mappingsOpened) {
        long nanos = System.nanoTime() - startNanos;
        long[] byKind = new long[MemoryKind.values().length];
        for (int i = 0; i < kinds.size(); i++) {
            byKind[kinds.get(i).ordinal()] += lengths.get(i);
        }
        long d2h = 0;
        long h2d = 0;
        if (scope != null) {
            scope.close();
            d2h = scope.bytes(CopyDirection.D2H);
            h2d = scope.bytes(CopyDirection.H2D);
        }
        MessageMetrics m = new MessageMetrics(
                direction,
                transport,
                kinds.size(),
                headerBytes,
                byKind[MemoryKind.HOST.ordinal()],
                byKind[MemoryKind.PINNED.ordinal()],
                byKind[MemoryKind.DEVICE.ordinal()],
                nanos,
                d2h,
                h2d,
                mappingsOpened);
        event.end();
        if (event.shouldCommit()) {
            event.transport = transport;
            event.direction = direction.name();
            event.frames = m.frames();
            event.headerBytes = headerBytes;
            event.hostFrameBytes = m.hostFrameBytes();
            event.pinnedFrameBytes = m.pinnedFrameBytes();
            event.deviceFrameBytes = m.deviceFrameBytes();
            event.deviceToHostBytes = d2h;
            event.hostToDeviceBytes = h2d;
            event.commit();
        }
        return m;
    }

    /** Stops counting copies, if {@link #finish} did not. */
    @Override
    public void close() {
        if (scope != null) {
            scope.close();
        }
    }
}
