package io.cuwire.cuda;

import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceStream;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A CUDA event of one device, for timing work on its streams: {@link #record} it before and after the work, then
 * {@link #elapsedMillis}. Owned by its creator; {@link #close()} destroys it (a second close throws
 * {@link IllegalStateException}). Not for concurrent use by several threads.
 */
public final class CudaEvent implements AutoCloseable {
    private final CudaDevice device;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    private CudaEvent(CudaDevice device) {
        this.device = device;
        this.handle = Driver.eventCreate(device);
    }

    /** A new timing event on {@code device}. */
    public static CudaEvent create(Device device) {
        return new CudaEvent(Cuda.cuda(device));
    }

    private MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException("CudaEvent of " + device + " is closed");
        }
        return handle;
    }

    /** Enqueues this event on {@code stream}, a stream of the same device; it completes when the work before it has. */
    public void record(DeviceStream stream) {
        CudaStream s = CudaStream.of(stream);
        if (s.cudaDevice() != device) {
            throw new IllegalArgumentException(stream + " is not a stream of " + device);
        }
        Driver.eventRecord(device, handle(), s.handle());
    }

    /** Blocks until the work before the last {@link #record} has finished. */
    public void synchronize() {
        Driver.eventSynchronize(device, handle());
    }

    /**
     * Milliseconds between two completed events of one device.
     *
     * @throws IllegalArgumentException if the events belong to different devices
     */
    public static float elapsedMillis(CudaEvent start, CudaEvent end) {
        if (start.device != end.device) {
            throw new IllegalArgumentException("CudaEvent of " + start.device + " and CudaEvent of " + end.device
                    + ": elapsed time is measured between two events of one device");
        }
        return Driver.eventElapsedTime(start.device, start.handle(), end.handle());
    }

    /**
     * Destroys the event.
     *
     * @throws IllegalStateException if the event was closed already
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException("CudaEvent of " + device + " is already closed");
        }
        Driver.eventDestroy(device, handle);
    }
}
