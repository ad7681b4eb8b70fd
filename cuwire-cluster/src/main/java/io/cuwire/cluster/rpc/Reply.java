package io.cuwire.cluster.rpc;

import io.cuwire.serialize.WireType;

/**
 * A worker's answer to a {@link Request} of the same id.
 *
 * @param id the request's id
 * @param status {@value #OK}, {@value #MISSING} (a model identity not in the cache), {@value #UNKNOWN_TASK},
 *     {@value #ERROR} or {@value #REDIRECT} (cuwire-spark: ask the peer whose address is the value instead)
 * @param value the result (for a redirect, the peer's address), or {@code null}
 * @param errorType the simple class name of the worker's exception, or {@code null}
 * @param error its message, or {@code null}
 */
@WireType("cuwire.cluster.Reply")
public record Reply(long id, String status, Object value, String errorType, String error) {
    public static final String OK = "ok";
    public static final String MISSING = "missing";
    public static final String UNKNOWN_TASK = "unknown-task";
    public static final String ERROR = "error";
    public static final String REDIRECT = "redirect";

    public static Reply ok(long id, Object value) {
        return new Reply(id, OK, value, null, null);
    }

    public static Reply failed(long id, Throwable t) {
        String status = t instanceof io.cuwire.cluster.UnknownTaskException ? UNKNOWN_TASK : ERROR;
        return new Reply(id, status, null, t.getClass().getSimpleName(), String.valueOf(t.getMessage()));
    }
}
