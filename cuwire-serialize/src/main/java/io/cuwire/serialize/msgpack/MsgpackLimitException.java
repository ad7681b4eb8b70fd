package io.cuwire.serialize.msgpack;

/** Nesting or a collection's entries beyond the limits given to {@link MsgpackReader}; refused before allocating. */
public final class MsgpackLimitException extends MsgpackException {
    private static final long serialVersionUID = 1L;

    MsgpackLimitException(String message) {
        super(message);
    }
}
