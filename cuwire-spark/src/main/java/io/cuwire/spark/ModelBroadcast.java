package io.cuwire.spark;

import io.cuwire.spark.internal.Node;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A model broadcast from the driver ({@link CuwireSpark#broadcast}): hand {@link #ref()} to tasks, and close this
 * when the model is no longer needed. Closing releases the driver's serialized form and evicts the copies the
 * executors cached; an executor that is gone is skipped (it holds nothing any more). A broadcast that becomes
 * unreachable without being closed is released by a {@link Cleaner} — a backstop, not a plan: close it.
 *
 * <p>The broadcast borrows the model's memory: keep the model open and unchanged until this is closed.
 *
 * @param <T> the model's type
 */
public final class ModelBroadcast<T> implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

    private final ModelRef<T> ref;
    private final Release release;
    private final Cleaner.Cleanable cleanable;

    ModelBroadcast(ModelRef<T> ref, Node node) {
        this.ref = ref;
        this.release = new Release(node, ref.id(), ref.version());
        this.cleanable = CLEANER.register(this, release);
    }

    /** The handle to ship to tasks. */
    public ModelRef<T> ref() {
        return ref;
    }

    /** Whether {@link #close()} ran (or the cleaner did). */
    public boolean isReleased() {
        return release.done.get();
    }

    /** Executors that did not answer the last release (lost ones); 0 before release. */
    public int unanswered() {
        return release.unanswered;
    }

    /** Releases the model on the driver and evicts every executor's copy. Closing twice is harmless. */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "ModelBroadcast[" + ref + (isReleased() ? ", released]" : "]");
    }

    /** The release, apart from the broadcast so that the cleaner can run it. */
    private static final class Release implements Runnable {
        final Node node;
        final long id;
        final long version;
        final AtomicBoolean done = new AtomicBoolean();
        volatile int unanswered;

        Release(Node node, long id, long version) {
            this.node = node;
            this.id = id;
            this.version = version;
        }

        @Override
        public void run() {
            if (done.compareAndSet(false, true)) {
                unanswered = node.unpublish(id, version);
            }
        }
    }
}
