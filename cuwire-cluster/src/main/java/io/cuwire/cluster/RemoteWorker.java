package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Endpoint;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The client's view of one worker process: its process, connection and liveness. A worker is lost once — when its
 * process exits, its connection breaks or a heartbeat goes unanswered — and stays lost: its endpoint fails every
 * pending and later call with {@link WorkerLostException}. A worker started by hand and connected to has no process
 * here ({@code null}): it is lost when its connection breaks or a heartbeat goes unanswered. Thread-safe.
 */
final class RemoteWorker {
    private static final int TAIL_LINES = 40;

    private final int index;
    private final int deviceOrdinal;
    private final Process process;
    private final Deque<String> tail = new ArrayDeque<>();
    private volatile String address;
    private volatile Endpoint endpoint;
    private volatile WorkerLostException lost;
    private volatile boolean closing;

    RemoteWorker(int index, int deviceOrdinal, Process process) {
        this.index = index;
        this.deviceOrdinal = deviceOrdinal;
        this.process = process;
    }

    public int index() {
        return index;
    }

    public int deviceOrdinal() {
        return deviceOrdinal;
    }

    /** The worker's process, or {@code null} for a worker started by hand. */
    public Process process() {
        return process;
    }

    public String address() {
        return address;
    }

    public void address(String value) {
        this.address = value;
    }

    public Endpoint endpoint() {
        return endpoint;
    }

    public void endpoint(Endpoint value) {
        this.endpoint = value;
    }

    /** Keeps the last lines the worker printed, for error messages. */
    public void output(String line) {
        synchronized (tail) {
            if (tail.size() == TAIL_LINES) {
                tail.removeFirst();
            }
            tail.addLast(line);
        }
    }

    /** The last lines the worker printed. */
    public String outputTail() {
        synchronized (tail) {
            return tail.isEmpty() ? "(no output)" : String.join("\n", tail);
        }
    }

    /** The exception of a lost worker, or {@code null} while it lives. */
    public WorkerLostException lost() {
        return lost;
    }

    /** Whether the worker is alive as far as the client knows. */
    public boolean isAlive() {
        Endpoint e = endpoint;
        return lost == null && (e == null || e.isOpen()) && (process == null || process.isAlive());
    }

    /** The exception to fail calls with after {@code cause}. */
    public WorkerLostException lostException(Throwable cause) {
        WorkerLostException l = lost;
        if (l != null) {
            return l;
        }
        String why = closing
                ? "the cluster is closing"
                : process != null && !process.isAlive()
                        ? "its process exited with code " + exitCode()
                        : String.valueOf(cause);
        return new WorkerLostException(index, why + "; last output:\n" + outputTail(), cause);
    }

    private String exitCode() {
        try {
            return String.valueOf(process.exitValue());
        } catch (IllegalThreadStateException e) {
            return "(running)";
        }
    }

    /**
     * Declares the worker lost (once): fails its calls and kills its process, unless the cluster is closing: a worker
     * told to shut down closes its connection before it has freed its memory, reported leaks and written its JFR
     * recordings, and {@link #awaitExit} kills it only if it outlives the shutdown's timeout.
     */
    public void markLost(Throwable cause) {
        synchronized (this) {
            if (lost != null) {
                return;
            }
            lost = lostException(cause);
        }
        Endpoint e = endpoint;
        if (e != null) {
            e.fail(cause);
        }
        if (process != null && !closing) {
            process.destroyForcibly();
        }
    }

    /** Marks the worker as being shut down on purpose. */
    public void closing() {
        closing = true;
    }

    /** Waits for the process to exit, destroying it after {@code timeout}. */
    public void awaitExit(Duration timeout) {
        if (process == null) {
            return;
        }
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /** A future that fails with this worker's loss. */
    public <T> CompletableFuture<T> failed() {
        return CompletableFuture.failedFuture(lost != null ? lost : lostException(null));
    }
}
