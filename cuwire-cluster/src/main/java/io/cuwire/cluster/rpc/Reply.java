package io.cuwire.cluster.rpc;

import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.WireType;

/**
 * An answer to the {@link Request} of the same id: one record per kind, each a registered type of its own on the wire
 * ({@link Endpoint#registerMessages}). What a server answers beyond these kinds travels as the value of an
 * {@link Ok}, in a type of its own registry.
 */
public sealed interface Reply {
    /** The id of the request this answers. */
    long id();

    /**
     * The request was served.
     *
     * @param id the request's id
     * @param value the result, or {@code null}
     */
    @WireType("cuwire.rpc.Ok")
    record Ok(long id, Object value) implements Reply {}

    /**
     * What the request names is not held here (a model identity not in the cache).
     *
     * @param id the request's id
     * @param why what is missing, for messages
     */
    @WireType("cuwire.rpc.Missing")
    record Missing(long id, String why) implements Reply {}

    /**
     * The server failed the request with an exception.
     *
     * @param id the request's id
     * @param errorType the exception's simple class name, so that a caller can map the failures it knows to its own
     *     exception types
     * @param error its message
     */
    @WireType("cuwire.rpc.Failed")
    record Failed(long id, String errorType, String error) implements Reply {}

    /**
     * The peer could not decode the request: its {@link Endpoint} answered, and the caller's future fails with the
     * exception the caller's endpoint makes of this (the cluster's {@code RemoteDecodeException}).
     *
     * @param id the request's id
     * @param errorType the simple class name of the decode's exception
     * @param error its message
     * @param path where in the request the decode failed ({@code root.value.model}), or {@code null} if not known
     */
    @WireType("cuwire.rpc.Undecodable")
    record Undecodable(long id, String errorType, String error, String path) implements Reply {}

    /** The answer to request {@code id}: served, with {@code value}. */
    static Ok ok(long id, Object value) {
        return new Ok(id, value);
    }

    /** The answer to request {@code id}, which failed with {@code t}. */
    static Failed failed(long id, Throwable t) {
        return new Failed(id, t.getClass().getSimpleName(), String.valueOf(t.getMessage()));
    }

    /** The answer to request {@code id}: what it names is not held here, because {@code why}. */
    static Missing missing(long id, String why) {
        return new Missing(id, why);
    }

    /**
     * The answer to request {@code id}, which this side could not decode because of {@code e} (a
     * {@link SerializationException}, or an {@link Error} such as {@link OutOfMemoryError}).
     */
    static Undecodable undecodable(long id, Throwable e) {
        return new Undecodable(
                id,
                e.getClass().getSimpleName(),
                String.valueOf(e.getMessage()),
                e instanceof SerializationException s ? s.path() : null);
    }
}
