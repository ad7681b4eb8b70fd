package io.cuwire.cluster;

/** A request failed on a worker: the worker's exception class name and message, as text (never a class to load). */
public class RemoteTaskException extends ClusterException {
    private static final long serialVersionUID = 1L;

    private final String remoteType;

    public RemoteTaskException(String remoteType, String message) {
        this("", remoteType, message);
    }

    /** A failure whose message is {@code what}, the remote type and the remote message. */
    protected RemoteTaskException(String what, String remoteType, String message) {
        super(what + remoteType + ": " + message);
        this.remoteType = remoteType;
    }

    /** The simple class name of the exception thrown on the worker. */
    public String remoteType() {
        return remoteType;
    }
}
