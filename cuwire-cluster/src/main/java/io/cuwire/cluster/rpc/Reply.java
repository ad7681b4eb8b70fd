package io.cuwire.cluster.rpc;

import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.WireType;

/**
 * A worker's answer to a {@link Request} of the same id.
 *
 * @param id the request's id
 * @param status {@value #OK}, {@value #MISSING} (what the request names is not held: a model identity not in the
 *     cache), {@value #ERROR} (the server's exception: {@code errorType} names its class, so that a caller can map
 *     the failures it knows to its own exception types) or {@value #UNDECODABLE} (the peer could not decode the
 *     request: its {@link Endpoint} answered, and the caller's future fails with
 *     {@link io.cuwire.cluster.RemoteDecodeException}); what a server answers beyond that travels as the value of an
 *     {@code ok} reply, in a type of its own registry
 * @param value the result, or {@code null}
 * @param errorType the simple class name of the server's exception, or {@code null}
 * @param error its message, or {@code null}
 * @param errorPath for {@value #UNDECODABLE}, where in the request the decode failed ({@code root.args[0].model}), if
 *     known; else {@code null}
 */
@WireType("cuwire.cluster.Reply")
public record Reply(long id, String status, Object value, String errorType, String error, String errorPath) {
    public static final String OK = "ok";
    public static final String MISSING = "missing";
    public static final String ERROR = "error";
    public static final String UNDECODABLE = "undecodable";

    /** A reply without an error path: every status but {@value #UNDECODABLE}. */
    public Reply(long id, String status, Object value, String errorType, String error) {
        this(id, status, value, errorType, error, null);
    }

    public static Reply ok(long id, Object value) {
        return new Reply(id, OK, value, null, null);
    }

    /** The answer {@value #ERROR} to request {@code id}, which failed with {@code t}. */
    public static Reply failed(long id, Throwable t) {
        return new Reply(id, ERROR, null, t.getClass().getSimpleName(), String.valueOf(t.getMessage()));
    }

    /** The answer {@value #MISSING} to request {@code id}: what it names is not held here, because {@code why}. */
    public static Reply missing(long id, String why) {
        return new Reply(id, MISSING, null, null, why);
    }

    /**
     * The answer to request {@code id}, which this side could not decode because of {@code e} (a
     * {@link SerializationException}, or an {@link Error} such as {@link OutOfMemoryError}).
     */
    public static Reply undecodable(long id, Throwable e) {
        return new Reply(id, UNDECODABLE, null, e.getClass().getSimpleName(), String.valueOf(e.getMessage()),
                e instanceof SerializationException s ? s.path() : null);
    }
}
