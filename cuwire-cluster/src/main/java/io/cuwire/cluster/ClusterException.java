package io.cuwire.cluster;

/**
 * Root of the cluster's exceptions:
 * <ul>
 *   <li>{@link WorkerLostException}: the worker died, stopped answering, or its connection broke;</li>
 *   <li>{@link UnknownTaskException}: the worker has no task of the name asked for;</li>
 *   <li>{@link RemoteTaskException}: a task (or another request) failed on the worker;
 *     {@link RemoteDecodeException}: the worker could not even decode the request;</li>
 *   <li>{@code ClusterException} itself: the cluster could not start, or was closed.</li>
 * </ul>
 */
public class ClusterException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ClusterException(String message) {
        super(message);
    }

    public ClusterException(String message, Throwable cause) {
        super(message, cause);
    }
}
