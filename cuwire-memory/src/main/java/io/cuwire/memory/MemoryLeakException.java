package io.cuwire.memory;

/** An allocator was closed while buffers it handed out (or child allocators) were still open. */
public class MemoryLeakException extends MemoryException {
    private static final long serialVersionUID = 1L;
    private final long leakedBytes;

    public MemoryLeakException(String message, long leakedBytes) {
        super(message);
        this.leakedBytes = leakedBytes;
    }

    /** Bytes still held by the open buffers when the allocator was closed. */
    public long leakedBytes() {
        return leakedBytes;
    }
}
