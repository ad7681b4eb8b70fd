package io.cuwire.cluster;

/**
 * A worker died, stopped answering heartbeats, or its connection broke. Every call pending on that worker fails with
 * this, and every later call to it fails at once; the other workers go on.
 */
public class WorkerLostException extends ClusterException {
    private static final long serialVersionUID = 1L;

    private final int worker;

    public WorkerLostException(int worker, String message, Throwable cause) {
        super("worker " + worker + " lost: " + message, cause);
        this.worker = worker;
    }

    /** The index of the worker that was lost. */
    public int worker() {
        return worker;
    }
}
