package io.cuwire.memory;

/**
 * An ordered queue of work on one device: asynchronous copies enqueued on a stream run in order, and
 * {@link #synchronize()} waits for all of them. A failure of enqueued work is reported by the next
 * {@code synchronize()} as a {@link CopyException}.
 *
 * <p>Streams are owned by whoever created them ({@link Device#newStream()}); {@code close()} waits for the work
 * still queued and then releases the stream; a second close throws {@link IllegalStateException} (two
 * holders each believed they owned it). Enqueueing on, or synchronizing, a closed
 * stream throws {@link IllegalStateException}. Thread-safe.
 */
public abstract class DeviceStream implements AutoCloseable {
    private final Device device;

    protected DeviceStream(Device device) {
        this.device = device;
    }

    /** The device this stream runs on. */
    public final Device device() {
        return device;
    }

    /** Blocks until all work enqueued so far has finished. */
    public abstract void synchronize();

    /**
     * Waits for queued work, then releases the stream.
     *
     * @throws IllegalStateException if the stream was closed already
     */
    @Override
    public abstract void close();

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + device + "]";
    }
}
