package io.cuwire.cuda;

import io.cuwire.memory.CopyException;
import io.cuwire.memory.DeviceStream;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A non-blocking {@code CUstream} of one {@link CudaDevice} (it does not wait for the legacy default stream).
 * {@link #close()} waits for queued work and destroys it; a second close throws. Thread-safe, but
 * {@code close()} must not race with work being enqueued.
 */
final class CudaStream extends DeviceStream {
    private final CudaDevice device;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaStream(CudaDevice device) {
        super(device);
        this.device = device;
        this.handle = Driver.streamCreate(device, Driver.CU_STREAM_NON_BLOCKING);
    }

    /** {@code stream} as a CUDA stream, or an {@link IllegalArgumentException} naming what it is. */
    public static CudaStream of(DeviceStream stream) {
        if (stream instanceof CudaStream s) {
            return s;
        }
        throw new IllegalArgumentException(stream + " is not a CUDA stream");
    }

    /** The device's CUDA device. */
    public CudaDevice cudaDevice() {
        return device;
    }

    /** The {@code CUstream}, for the platform's own calls. */
    public MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
        return handle;
    }

    @Override
    public void synchronize() {
        MemorySegment h = handle();
        try {
            Driver.streamSynchronize(device, h);
        } catch (CudaException e) {
            throw new CopyException("work enqueued on " + this + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException(this + " is already closed");
        }
        try {
            Driver.streamSynchronize(device, handle);
        } catch (CudaException e) {
            throw new CopyException("work enqueued on " + this + " failed: " + e.getMessage(), e);
        } finally {
            Driver.streamDestroy(device, handle);
        }
    }
}
