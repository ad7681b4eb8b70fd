package io.cuwire.transport.internal.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * A bounded wait on one file descriptor becoming readable: libc's {@code ppoll} on a UCX worker's event descriptor
 * ({@code ucp_worker_get_efd}), with a timeout in nanoseconds, which JUCX's {@code waitForEvents} (no timeout) does not
 * give. One per thread that waits; not thread-safe. Its memory lives until {@link #close}.
 */
final class EventWait implements AutoCloseable {
    private static final short POLLIN = 0x001;
    private static final MethodHandle PPOLL = ppoll();

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment pollfd = arena.allocate(8, 4); // struct pollfd { int fd; short events, revents; }
    private final MemorySegment timeout = arena.allocate(16, 8); // struct timespec { long tv_sec, tv_nsec; }

    /** Waits on {@code fd}; fails if libc has no {@code ppoll}. */
    EventWait(int fd) {
        if (PPOLL == null) {
            arena.close();
            throw new UnsupportedOperationException("libc has no ppoll");
        }
        pollfd.set(ValueLayout.JAVA_INT, 0, fd);
        pollfd.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
    }

    /**
     * Waits until the descriptor is readable or {@code nanos} pass (a signal may end it early).
     *
     * @return whether it became readable
     */
    boolean await(long nanos) {
        pollfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        timeout.set(ValueLayout.JAVA_LONG, 0, nanos / 1_000_000_000L);
        timeout.set(ValueLayout.JAVA_LONG, 8, nanos % 1_000_000_000L);
        try {
            int rc = (int) PPOLL.invokeExact(pollfd, 1L, timeout, MemorySegment.NULL);
            return rc > 0;
        } catch (Throwable t) {
            throw new IllegalStateException("ppoll downcall failed", t);
        }
    }

    @Override
    public void close() {
        arena.close();
    }

    @SuppressWarnings("restricted") // libc's ppoll, with memory of this class's own arena
    private static MethodHandle ppoll() {
        Linker linker = Linker.nativeLinker();
        return linker.defaultLookup()
                .find("ppoll")
                .map(f -> linker.downcallHandle(
                        f,
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS,
                                ValueLayout.JAVA_LONG,
                                ValueLayout.ADDRESS,
                                ValueLayout.ADDRESS)))
                .orElse(null);
    }
}
