package io.cuwire.transport.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * An opt-in record of when an IPC or TCP connection's messages pass the points of their way (a send called, its frames
 * pushed or staged, its bytes written; a record's type read, its header parsed, its frames copied, the message handed
 * over, the application's receive returning), for profiling a round trip across the two processes of a connection on
 * one host; the IPC and TCP transports stamp. Off unless the system property {@value #PROPERTY} names a directory;
 * then every stamp is {@link System#nanoTime()} (on Linux {@code CLOCK_MONOTONIC}, so the stamps of two processes on
 * one host are on one clock) and the point, kept in a fixed array of {@value #CAPACITY} stamps (later ones are
 * dropped), written at exit to {@code <directory>/timeline-<pid>.tsv}: a line {@code # <pid> <command line>}, then
 * {@code <nanos>\t<point>} lines. Off, {@link #mark} is a test of a constant that the JIT removes. cuwire-bench's
 * {@code io.cuwire.bench.harness.TimelineReport} reads the files of both processes.
 */
public final class Timeline {
    /** The system property that turns the timeline on: the directory its file goes to. */
    public static final String PROPERTY = "cuwire.transport.timeline";
    /** Stamps kept; later ones are dropped. */
    public static final int CAPACITY = 1 << 21;

    private static final String DIRECTORY = System.getProperty(PROPERTY, "");
    /** Whether the timeline is on in this process. */
    public static final boolean ON = !DIRECTORY.isBlank();

    private static final AtomicLongArray STAMPS = new AtomicLongArray(ON ? CAPACITY : 0);
    private static final AtomicInteger NEXT = new AtomicInteger();
    private static final int POINT_BITS = 6;

    static {
        if (ON) {
            Runtime.getRuntime().addShutdownHook(new Thread(Timeline::writeFile, "cuwire-timeline"));
        }
    }

    /** The points of a message's way; their names are what the file holds. */
    public enum Point {
        /** {@code send} called. */
        SEND_CALLED,
        /** The write lock held and the message's write begun (on the caller's thread or the writer's). */
        SEND_WRITING,
        /** Its device frames' copies into the peer's memory enqueued (ipc). */
        SEND_ENQUEUED,
        /** Its device frames pushed into the peer's memory, the copies waited for (ipc). */
        SEND_PUSHED,
        /** Its last byte given to the socket. */
        SEND_WRITTEN,
        /** Its future completed (after the peer's consumed record when the peer pulled frames). */
        SEND_COMPLETED,
        /** The reader found data on the socket. */
        READ_WOKE,
        /** A record's type byte read. */
        READ_TYPE,
        /** A message's header read and its tag checked. */
        READ_HEADER,
        /** A message's header parsed. */
        READ_PARSED,
        /** A frame allocated (or lent out of this side's arena). */
        READ_ALLOCATED,
        /** A device frame's reference read, its tag checked, parsed. */
        READ_REFERENCE,
        /** A device frame's source mapped (a lease of the mapping cache). */
        READ_MAPPED,
        /** A message's frames allocated or lent, their references read and their copies enqueued. */
        READ_FRAMES,
        /** A message's copies waited for. */
        READ_COPIED,
        /** The peer's liveness checked after the copies. */
        READ_ALIVE,
        /** The message handed over to {@code receive}. */
        READ_QUEUED,
        /** A consumed record read (the future of the message it answers completes next). */
        READ_CONSUMED,
        /** This side's owed consumed record written on its own, after the grace (none rode with a reply). */
        CONSUMED_ALONE,
        /** {@code receive} called. */
        RECEIVE_CALLED,
        /** {@code receive} returning a message. */
        RECEIVE_RETURNED,
        /** Device frames copied into pinned host memory and the copies waited for, ready to write (tcp). */
        SEND_STAGED,
        /** A device frame's (or run's) bytes read through the staging ring, its copies to the device enqueued (tcp). */
        READ_STAGED
    }

    private Timeline() {}

    /** Stamps {@code point} now, if the timeline is on. */
    public static void mark(Point point) {
        if (ON) {
            int i = NEXT.getAndIncrement();
            if (i < CAPACITY) {
                STAMPS.setRelease(i, System.nanoTime() << POINT_BITS | point.ordinal());
            }
        }
    }

    private static void writeFile() {
        long pid = ProcessHandle.current().pid();
        Path file = Path.of(DIRECTORY).resolve("timeline-" + pid + ".tsv");
        int n = Math.min(NEXT.get(), CAPACITY);
        Point[] points = Point.values();
        try {
            Files.createDirectories(file.getParent());
            try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
                w.write("# " + pid + " "
                        + ProcessHandle.current().info().commandLine().orElse("?") + "\n");
                for (int i = 0; i < n; i++) {
                    long s = STAMPS.getAcquire(i);
                    if (s != 0) {
                        w.write((s >>> POINT_BITS) + "\t" + points[(int) (s & ((1 << POINT_BITS) - 1))] + "\n");
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cuwire timeline: could not write " + file, e);
        }
    }
}
