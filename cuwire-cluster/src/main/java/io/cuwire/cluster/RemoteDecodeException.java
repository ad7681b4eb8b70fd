package io.cuwire.cluster;

/**
 * The peer could not decode a request: its registry does not know a type the request carries, refused its family,
 * or found it beyond its limits or malformed. Nothing ran there; the connection stays usable.
 */
public class RemoteDecodeException extends RemoteTaskException {
    private static final long serialVersionUID = 1L;

    private final String path;

    /**
     * @param remoteType the simple class name of the peer's decode exception ({@code UnknownTypeException})
     * @param message its message
     * @param path where in the request it failed ({@code root.args[0].model}), or {@code null} if the peer did not
     *     say
     */
    public RemoteDecodeException(String remoteType, String message, String path) {
        super("the peer could not decode the request: ", remoteType, message);
        this.path = path;
    }

    /** Where in the request the peer's decode failed, from the request's root; {@code null} if it did not say. */
    public String path() {
        return path;
    }
}
