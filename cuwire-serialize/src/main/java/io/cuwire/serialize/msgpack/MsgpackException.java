package io.cuwire.serialize.msgpack;

/**
 * A failure of {@link MsgpackReader}: bytes that are not the msgpack it reads ({@link MalformedMsgpackException}) or
 * beyond the caller's limits ({@link MsgpackLimitException}), found before anything was allocated for them. The
 * serialization layer reports these as its own {@code MalformedHeaderException} and {@code LimitExceededException},
 * with the same message; this package, the low-level codec, names nothing of that layer.
 */
public abstract sealed class MsgpackException extends RuntimeException
        permits MalformedMsgpackException, MsgpackLimitException {
    private static final long serialVersionUID = 1L;

    MsgpackException(String message) {
        super(message);
    }
}
