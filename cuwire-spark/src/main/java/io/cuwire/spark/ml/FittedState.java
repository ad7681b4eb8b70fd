package io.cuwire.spark.ml;

import io.cuwire.memory.Closeables;
import io.cuwire.ml.Estimator;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.ModelBroadcast;
import io.cuwire.spark.ModelRef;
import java.io.Serial;
import java.io.Serializable;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * The fitted state that a model, its copies and the plans of the {@code DataFrame}s their transforms returned
 * share: the fitted cuwire estimator in the driver's device memory and, from the first transform on, its broadcast
 * to the executors. Every holder takes a {@link Hold}; the state is released (the broadcast closed, which evicts the
 * executors' copies, then the estimator closed) when the last hold is released, by {@link Hold#close()} or, for a
 * holder that became unreachable without being closed, by a {@link Cleaner}. A lazy {@code DataFrame} keeps its
 * hold in its plan ({@link PlanHandle}), so dropping or closing the model it came from cannot break it.
 *
 * <p>A state may start {@linkplain #lazy unloaded}: its estimator is read into device memory on first use (Spark
 * Connect's model cache reloads offloaded models this way: a reload costs no device memory until the model is used).
 * A {@linkplain #none() state of nothing} is what a model made with its no-argument constructor holds: any use of it
 * fails.
 *
 * <p>Thread-safe. The release runs on the thread that drops the last hold, or on the cleaner's thread.
 */
final class FittedState {
    private static final Cleaner CLEANER = Cleaner.create(
            r -> Thread.ofPlatform().daemon().name("cuwire-spark-model-cleaner").unstarted(r));
    /** Holds released by the cleaner (their holder became unreachable), since the JVM started: for tests. */
    private static final AtomicLong CLEANED = new AtomicLong();

    /** What is fitted, for messages: "the fitted LinearRegression", or where it will be read from. */
    private final String what;
    /** Reads the estimator on first use; null once read (or for a state made fitted). */
    private Supplier<Estimator> loader;
    /** The fitted estimator; null until read. */
    private Estimator fitted;
    /** The fitted estimator's size as cuwire serializes it (header and frames), or -1 until known. */
    private long sizeBytes;

    private int holds;
    /** Set when the last hold went: no new holds, no broadcast. */
    private boolean released;
    /** Set once the broadcast and the estimator were closed. */
    private volatile boolean freed;

    private ModelBroadcast<Estimator> broadcast;

    /** The state of {@code fitted}, which it owns from now on; no holds yet. */
    FittedState(Estimator fitted) {
        this.what = "the fitted " + fitted.getClass().getSimpleName();
        this.fitted = fitted;
        this.sizeBytes = -1;
    }

    private FittedState(String what, Supplier<Estimator> loader, long sizeBytes) {
        this.what = what;
        this.loader = loader;
        this.sizeBytes = sizeBytes;
    }

    /**
     * A state whose estimator {@code load} reads on first use (into device memory), of {@code sizeBytes} as cuwire
     * serializes it; {@code what} names it in messages. The state owns what {@code load} returns.
     */
    static FittedState lazy(String what, long sizeBytes, Supplier<Estimator> load) {
        return new FittedState(what, load, sizeBytes);
    }

    /** The state of a model made with its no-argument constructor: using it fails, naming {@code model}. */
    static FittedState none(String model) {
        return new FittedState(
                model + " made with its no-argument constructor",
                () -> {
                    throw new IllegalStateException(
                            model + " made with its no-argument constructor has no fitted state (fit "
                                    + "an estimator or load a saved model)");
                },
                0);
    }

    /**
     * A new hold on this state for {@code holder}: released when it is closed, or when {@code holder} becomes
     * unreachable.
     *
     * @throws IllegalStateException if the state was released already (its last hold went)
     */
    synchronized Hold hold(Object holder) {
        if (released) {
            throw new IllegalStateException(what + " was released: no model, copy or DataFrame holds it any more");
        }
        holds++;
        Drop drop = new Drop(this);
        return new Hold(this, drop, CLEANER.register(holder, drop));
    }

    /**
     * The fitted estimator (do not close it: the state owns it), read into device memory first if this state is
     * {@linkplain #lazy lazy} and was not read yet.
     *
     * @throws IllegalStateException if the state was released, or is a {@linkplain #none() state of nothing}
     */
    synchronized Estimator estimator() {
        if (released) {
            throw new IllegalStateException(what + " was released");
        }
        if (fitted == null) {
            fitted = loader.get();
            loader = null;
        }
        return fitted;
    }

    /** Whether the estimator is in memory: a state made fitted, or a lazy one that was used. */
    synchronized boolean isLoaded() {
        return fitted != null;
    }

    /** The fitted estimator's size as cuwire serializes it, computing it with {@code size} the first time. */
    synchronized long sizeBytes(ToLongFunction<Estimator> size) {
        if (sizeBytes < 0) {
            sizeBytes = size.applyAsLong(estimator());
        }
        return sizeBytes;
    }

    /** The broadcast's handle, broadcasting the fitted estimator on first call; the caller holds this state. */
    synchronized ModelRef<Estimator> ref() {
        Estimator e = estimator();
        if (broadcast == null || broadcast.isReleased()) {
            broadcast = CuwireSpark.broadcast(e);
        }
        return broadcast.ref();
    }

    /** The holds not yet released. */
    synchronized int holds() {
        return holds;
    }

    /** Whether the last hold went and the state was released: the broadcast and the estimator are closed. */
    boolean isReleased() {
        return freed;
    }

    /** Holds the cleaner released since the JVM started (their holders became unreachable unclosed). */
    static long cleaned() {
        return CLEANED.get();
    }

    private void drop() {
        ModelBroadcast<Estimator> b;
        Estimator e;
        synchronized (this) {
            if (--holds > 0) {
                return;
            }
            released = true;
            b = broadcast;
            broadcast = null;
            e = fitted;
            loader = null;
        }
        List<AutoCloseable> release = new ArrayList<>();
        release.add(b);
        release.add(e);
        try {
            Closeables.closeAll(release);
        } finally {
            freed = true;
        }
    }

    /** A release of one hold, run once: by {@link Hold#close()} or by the cleaner. */
    private static final class Drop implements Runnable {
        private final FittedState state;
        private final AtomicBoolean explicit = new AtomicBoolean();

        Drop(FittedState state) {
            this.state = state;
        }

        @Override
        public void run() {
            if (!explicit.get()) {
                CLEANED.incrementAndGet();
            }
            state.drop();
        }
    }

    /**
     * One holder's claim on the state. Closing it releases the claim (the state goes with the last one); closing
     * twice is harmless. A hold whose holder becomes unreachable is released by the cleaner.
     */
    static final class Hold implements AutoCloseable {
        private final FittedState state;
        private final Drop drop;
        private final Cleaner.Cleanable cleanable;
        private final AtomicBoolean closed = new AtomicBoolean();

        private Hold(FittedState state, Drop drop, Cleaner.Cleanable cleanable) {
            this.state = state;
            this.drop = drop;
            this.cleanable = cleanable;
        }

        /** The state held. */
        FittedState state() {
            return state;
        }

        /** Whether {@link #close()} ran. */
        boolean isClosed() {
            return closed.get();
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                drop.explicit.set(true);
                cleanable.clean();
            }
        }
    }

    /**
     * What a transform's plan carries: the broadcast's handle, which travels to the tasks, and on the driver a hold
     * on the state, which does not ({@code transient}). The plan of a {@code DataFrame} references this object for
     * as long as the {@code DataFrame} (or one derived from it) exists, and the state stays with it.
     */
    static final class PlanHandle implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;

        private final ModelRef<Estimator> ref;
        /** Kept for its reachability on the driver; not serialized. */
        private final transient Hold hold;

        /** A handle holding {@code state}, which the caller holds. */
        PlanHandle(FittedState state) {
            this.ref = state.ref();
            this.hold = state.hold(this);
        }

        /** The broadcast's handle. */
        ModelRef<Estimator> ref() {
            return ref;
        }
    }
}
