package io.cuwire.memory.internal;

import io.cuwire.memory.CopyException;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceStream;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/** A stream of the emulated device: one daemon thread running enqueued copies in order. */
final class EmulatedStream extends DeviceStream {
    private static final AtomicInteger IDS = new AtomicInteger();

    private final ExecutorService executor;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile boolean closed;

    EmulatedStream(Device device) {
        super(device);
        String name = "cuwire-" + device + "-stream-" + IDS.incrementAndGet();
        this.executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    void enqueue(Runnable work) {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        executor.execute(() -> {
            if (failure.get() != null) {
                return;
            }
            try {
                work.run();
            } catch (RuntimeException | Error e) {
                failure.compareAndSet(null, e);
            }
        });
    }

    @Override
    public void synchronize() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        try {
            executor.submit(() -> {}).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CopyException("interrupted while synchronizing " + this, e);
        } catch (ExecutionException e) {
            throw new CopyException("synchronizing " + this + " failed", e.getCause());
        }
        Throwable t = failure.getAndSet(null);
        if (t != null) {
            throw new CopyException("asynchronous copy on " + this + " failed: " + t.getMessage(), t);
        }
    }

    @Override
    public void close() {
        if (closed) {
            throw new IllegalStateException(this + " is already closed");
        }
        try {
            synchronize();
        } finally {
            closed = true;
            executor.shutdown();
        }
    }
}
