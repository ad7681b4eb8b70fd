package io.cuwire.cluster;

/** A worker was asked to run a task name its {@link TaskRegistry} does not hold; nothing ran. */
public class UnknownTaskException extends ClusterException {
    private static final long serialVersionUID = 1L;

    public UnknownTaskException(String message) {
        super(message);
    }
}
