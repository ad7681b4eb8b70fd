package io.cuwire.serialize.msgpack;

/** Bytes that are not valid msgpack, or not the subset {@link MsgpackReader} reads; the message ends with the byte. */
public final class MalformedMsgpackException extends MsgpackException {
    private static final long serialVersionUID = 1L;

    MalformedMsgpackException(String message) {
        super(message);
    }
}
