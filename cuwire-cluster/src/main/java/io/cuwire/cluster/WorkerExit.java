package io.cuwire.cluster;

/**
 * Why a worker process stopped, as its exit code: {@code cuwire worker --help} and the README list these. Whatever
 * the reason, a worker that stops frees everything it holds first; memory still allocated then is a leak, reported in
 * its log, and the exit code is {@link #LEAK} instead.
 */
public enum WorkerExit {
    /** The client closed the cluster (a shutdown request) and the worker freed everything. */
    CLOSED(0, "the client closed the cluster"),
    /** The worker could not start: its address could not be bound, or its device could not be used. */
    START_FAILED(1, "the worker could not start (its address or device)"),
    /** Bad arguments, or no cluster secret. */
    USAGE(2, "bad arguments or no cluster secret"),
    /** Memory was still allocated when the worker shut down (the leak report is in its log), whatever the reason. */
    LEAK(3, "memory was still allocated at shutdown (a leak; its report is logged)"),
    /**
     * The client's connection ended without a shutdown request: closed, reset, stalled past the I/O timeout, or the
     * client refused a message of the worker.
     */
    CLIENT_LOST(4, "the client's connection ended without a shutdown request (closed, reset, stalled)"),
    /**
     * The worker refused a message of the client: malformed, beyond the limits or a decode budget, not the protocol.
     */
    PROTOCOL_VIOLATION(5, "the client sent what the worker refuses (malformed, beyond the limits, not the protocol)"),
    /** The worker failed: a message it could not take (no memory for its frames), an unexpected exception. */
    ERROR(6, "the worker failed (a message it had no memory for, an unexpected exception)");

    private final int code;
    private final String meaning;

    WorkerExit(int code, String meaning) {
        this.code = code;
        this.meaning = meaning;
    }

    /** The process exit code. */
    public int code() {
        return code;
    }

    /** What the code means, in a few words. */
    public String meaning() {
        return meaning;
    }

    /**
     * The exit of {@code code}.
     *
     * @throws IllegalArgumentException if no exit has that code
     */
    public static WorkerExit of(int code) {
        for (WorkerExit e : values()) {
            if (e.code == code) {
                return e;
            }
        }
        throw new IllegalArgumentException("no worker exit has code " + code);
    }
}
