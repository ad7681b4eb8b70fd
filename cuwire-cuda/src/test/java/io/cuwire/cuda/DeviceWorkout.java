package io.cuwire.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Device work for the context tests, from any thread: every kind of operation of a {@link CudaDevice}, checked
 * against the values it should produce (an {@link AssertionError} naming the operation otherwise), and the means to
 * leave threads in the wrong context on purpose ({@link #scramble}, {@link Scramblers}). Used by
 * {@code CudaContextThreadsTest} and by its child process {@code SharedGpuChild}.
 */
final class DeviceWorkout {
    private final CudaDevice gpu;
    private final BufferAllocator<DeviceBuffer> memory;
    private final BufferAllocator<HostBuffer> pinned;

    DeviceWorkout(CudaDevice gpu, BufferAllocator<DeviceBuffer> memory, BufferAllocator<HostBuffer> pinned) {
        this.gpu = gpu;
        this.memory = memory;
        this.pinned = pinned;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what + " (on " + Thread.currentThread() + ")");
        }
    }

    private static byte[] bytes(DeviceBuffer b) {
        byte[] out = new byte[Math.toIntExact(b.byteSize())];
        CopyEngine.copyToSegment(b, 0, MemorySegment.ofArray(out));
        return out;
    }

    private static float[] floats(DeviceBuffer b, int n) {
        float[] out = new float[n];
        CopyEngine.copyToSegment(b, 0, MemorySegment.ofArray(out));
        return out;
    }

    /**
     * Once each, checked: allocate and free device and pinned memory; host-to-device and device-to-host copies from
     * and to heap arrays (staged) and pinned memory; a device-to-device copy; a memset; a stream with two timing
     * events around an asynchronous copy and a kernel launch; a cuBLAS matrix-vector product on {@code blas}'s
     * stream; free memory, and an IPC export of a buffer. Values are small integers, exact in float32.
     */
    void everyOperation(long seed, CuBlas blas) {
        SplittableRandom r = new SplittableRandom(seed);
        int n = 1024 + 4 * r.nextInt(1024);
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = r.nextInt(-1000, 1000);
        }
        long bytes = (long) n * Float.BYTES;
        try (DeviceBuffer a = memory.allocate(bytes);
                DeviceBuffer b = memory.allocate(bytes);
                HostBuffer pin = pinned.allocate(bytes)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(values), a, 0);
            check(Arrays.equals(values, floats(a, n)), "heap round trip of " + bytes + " bytes");

            CopyEngine.copy(a, b);
            CopyEngine.copy(b, pin);
            check(Arrays.equals(values, pin.segment().toArray(JAVA_FLOAT)), "device-to-device, then to pinned");

            gpu.memset(b, 0, bytes, (byte) 0x5A);
            byte[] filled = new byte[(int) bytes];
            Arrays.fill(filled, (byte) 0x5A);
            check(Arrays.equals(filled, bytes(b)), "memset of " + bytes + " bytes");
            CopyEngine.copy(pin, b);
            check(Arrays.equals(values, floats(b, n)), "pinned to device");

            try (DeviceStream s = gpu.newStream();
                    CudaEvent start = CudaEvent.create(gpu);
                    CudaEvent end = CudaEvent.create(gpu)) {
                start.record(s);
                CopyEngine.copyAsync(pin, 0, a, 0, bytes, s);
                Kernels.scaleF32(s, 2f, a, n);
                end.record(s);
                end.synchronize();
                float ms = CudaEvent.elapsedMillis(start, end);
                check(ms >= 0, "elapsed time between two completed events: " + ms);
                s.synchronize();
            }
            float[] doubled = new float[n];
            for (int i = 0; i < n; i++) {
                doubled[i] = 2 * values[i];
            }
            check(Arrays.equals(doubled, floats(a, n)), "async copy then scale kernel on a stream");

            gemv(r, blas);

            check(gpu.freeMemory() > 0, "free memory");
            IpcHandle h = gpu.exportHandle(a);
            byte[] bus = Arrays.copyOfRange(h.handle(), Driver.IPC_HANDLE_SIZE, h.handle().length);
            check(
                    h.length() == bytes && gpu.pciBusId().equals(new String(bus, StandardCharsets.US_ASCII)),
                    "IPC export " + h);
            IpcHandle whole = gpu.exportAllocation(b);
            check(whole.length() >= bytes && gpu.allocationOffset(b) == 0, "IPC export of b's allocation " + whole);
        }
    }

    /** {@code y = A x} by cuBLAS for a small integer {@code A} (8 x 16, column-major), checked exactly. */
    private void gemv(SplittableRandom r, CuBlas blas) {
        int m = 8;
        int k = 16;
        float[] a = new float[m * k];
        float[] x = new float[k];
        for (int i = 0; i < a.length; i++) {
            a[i] = r.nextInt(-8, 8);
        }
        for (int i = 0; i < k; i++) {
            x[i] = r.nextInt(-8, 8);
        }
        float[] expected = new float[m];
        for (int col = 0; col < k; col++) {
            for (int row = 0; row < m; row++) {
                expected[row] += a[col * m + row] * x[col];
            }
        }
        try (DeviceBuffer da = memory.allocate(a.length * 4L);
                DeviceBuffer dx = memory.allocate(k * 4L);
                DeviceBuffer dy = memory.allocate(m * 4L)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(a), da, 0);
            CopyEngine.copyFromSegment(MemorySegment.ofArray(x), dx, 0);
            blas.sgemv(Transpose.NONE, m, k, 1f, da, 0, m, dx, 0, 1, 0f, dy, 0, 1);
            blas.stream().synchronize();
            check(Arrays.equals(expected, floats(dy, m)), "cuBLAS sgemv");
        }
    }

    /**
     * {@code rounds} 8-byte copies each way through the staging buffer (heap arrays, as a backend reads a scalar),
     * each of a value only this caller writes; {@code scramble} leaves the thread in the wrong context before each.
     */
    void stagedScalars(long seed, int rounds, List<CudaDevice> devices) {
        long[] one = new long[1];
        try (DeviceBuffer d = memory.allocate(Long.BYTES)) {
            for (int i = 0; i < rounds; i++) {
                long value = seed * 1_000_003L + i;
                one[0] = value;
                scramble(devices, i);
                CopyEngine.copyFromSegment(MemorySegment.ofArray(one), d, 0);
                one[0] = 0;
                scramble(devices, i + 1);
                CopyEngine.copyToSegment(d, 0, MemorySegment.ofArray(one));
                check(one[0] == value, "round " + i + " read " + one[0] + " (expected: " + value + ")");
            }
        }
    }

    /**
     * Leaves the calling thread in the wrong context: none, or (with two devices or more) another device's. Whatever
     * it leaves, the next driver call must make its own device's context current itself.
     */
    static void scramble(List<CudaDevice> devices, int i) {
        if (devices.size() < 2 || i % 2 == 0) {
            Driver.ctxSetCurrent(MemorySegment.NULL);
        } else {
            Driver.ctxSetCurrent(devices.get(1 + i / 2 % (devices.size() - 1)).context());
        }
    }

    /** The CUDA devices of this process; the first is the one the tests work on. */
    static List<CudaDevice> devices() {
        try {
            return CudaPlatform.get().devices();
        } catch (DeviceUnavailableException e) {
            throw new AssertionError("no CUDA device: " + e.getMessage(), e);
        }
    }

    /**
     * Virtual threads that, until closed, keep leaving whichever carrier thread they run on in the wrong context and
     * yield it: a virtual thread that parks (on the staging lock) and resumes on such a carrier finds no context of its
     * device there. {@link #close()} stops them and rethrows what one failed with.
     */
    static final class Scramblers implements AutoCloseable {
        private final AtomicBoolean stop = new AtomicBoolean();
        private final AtomicLong scrambles = new AtomicLong();
        private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
        private final List<Future<?>> running = new ArrayList<>();

        Scramblers(int threads, List<CudaDevice> devices) {
            for (int t = 0; t < threads; t++) {
                int first = t;
                running.add(executor.submit(() -> {
                    for (int i = first; !stop.get(); i++) {
                        scramble(devices, i);
                        scrambles.incrementAndGet();
                        Thread.yield();
                    }
                    return null;
                }));
            }
        }

        /** How often a carrier was left in the wrong context. */
        long scrambles() {
            return scrambles.get();
        }

        @Override
        public void close() {
            stop.set(true);
            try {
                for (Future<?> f : running) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } catch (ExecutionException e) {
                throw new AssertionError("a scrambler failed: " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                throw new AssertionError("a scrambler did not stop", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while stopping the scramblers", e);
            } finally {
                executor.shutdownNow();
            }
        }
    }

    /**
     * Runs {@code tasks} on {@code executor} and waits for them all; throws an {@link AssertionError} naming how many
     * failed, with the first failure as its cause.
     */
    static void runAll(ExecutorService executor, List<Callable<Void>> tasks) throws InterruptedException {
        List<Future<Void>> futures = new ArrayList<>();
        for (Callable<Void> t : tasks) {
            futures.add(executor.submit(t));
        }
        Throwable first = null;
        int failed = 0;
        for (Future<Void> f : futures) {
            try {
                f.get(300, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                failed++;
                first = first == null ? e.getCause() : first;
            } catch (TimeoutException e) {
                failed++;
                first = first == null ? e : first;
            }
        }
        if (failed > 0) {
            throw new AssertionError(failed + " of " + tasks.size() + " tasks failed; the first: " + first, first);
        }
    }
}
