package io.cuwire.serialize;

/**
 * A message whose decoding would cost more work than {@link Limits#maxDecodeWork} allows (back-references that
 * describe an exponential graph, a set of values that hash or compare expensively, a JDK stream that rebuilds too
 * much), or more thread stack than the decoding thread has. A receiver should treat the peer as hostile: the
 * cluster's endpoints answer the request and close the connection.
 */
public class DecodeBudgetExceededException extends LimitExceededException {
    private static final long serialVersionUID = 1L;

    public DecodeBudgetExceededException(String message) {
        super(message);
    }

    /** A budget passed at {@code path} in the value: the message ends with {@code at <path>}. */
    public DecodeBudgetExceededException(String message, String path) {
        super(message, path);
    }
}
