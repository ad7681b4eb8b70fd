package io.cuwire.memory;

/** An allocation would take an allocator (or one of its ancestors) past its limit, or the memory itself is gone. */
public class AllocationLimitException extends MemoryException {
    private static final long serialVersionUID = 1L;

    public AllocationLimitException(String message) {
        super(message);
    }

    public AllocationLimitException(String message, Throwable cause) {
        super(message, cause);
    }
}
