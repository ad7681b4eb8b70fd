package io.cuwire.cuda;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.IpcHandle;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.zip.CRC32;

/**
 * The other process of {@code CudaContextThreadsTest}'s shared-GPU test, a worker on the client's GPU: opens the
 * handle given as arguments (hex bytes, device ordinal, offset, length, then the CRC32 the bytes must have) on device
 * 0, and from 32 virtual threads (while others leave the carriers in the wrong context) reads its bytes through the
 * staging buffer in 4 KiB pieces, prints their CRC32, writes back their complement the same way, and does every
 * device operation on memory of its own. Prints {@code CLOSED} once the mapping is closed and the allocators are
 * back to zero; exits with 1 on any failure.
 */
public final class SharedGpuChild {
    private static final int THREADS = 32;
    private static final int PIECE = 4096;

    private SharedGpuChild() {}

    public static void main(String[] args) throws Exception {
        IpcHandle handle = new IpcHandle(
                "cuda",
                Integer.parseInt(args[1]),
                HexFormat.of().parseHex(args[0]),
                Long.parseLong(args[2]),
                Long.parseLong(args[3]));
        long expectedCrc = Long.parseLong(args[4]);
        List<CudaDevice> devices = DeviceWorkout.devices();
        CudaDevice gpu = devices.getFirst();
        int n = Math.toIntExact(handle.length());
        byte[] bytes = new byte[n];
        try (BufferAllocator<DeviceBuffer> memory = gpu.newAllocator("child/device", BufferAllocator.UNLIMITED);
                BufferAllocator<HostBuffer> pinned = gpu.newPinnedAllocator("child/pinned", BufferAllocator.UNLIMITED);
                DeviceStream stream = gpu.newStream();
                CuBlas blas = CuBlas.create(stream);
                DeviceBuffer shared = gpu.openHandle(handle);
                DeviceWorkout.Scramblers scramblers = new DeviceWorkout.Scramblers(4, devices);
                ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            DeviceWorkout workout = new DeviceWorkout(gpu, memory, pinned);
            DeviceWorkout.runAll(threads, slices(n, (from, to) -> {
                for (int off = from; off < to; off += PIECE) {
                    int len = Math.min(PIECE, to - off);
                    CopyEngine.copyToSegment(
                            shared, off, MemorySegment.ofArray(bytes).asSlice(off, len));
                }
            }));
            CRC32 crc = new CRC32();
            crc.update(bytes);
            System.out.println("READ " + crc.getValue() + " ON " + shared.device());
            if (crc.getValue() != expectedCrc) {
                throw new AssertionError("read CRC32 " + crc.getValue() + " (expected: " + expectedCrc + ")");
            }
            for (int i = 0; i < n; i++) {
                bytes[i] = (byte) ~bytes[i];
            }
            DeviceWorkout.runAll(threads, slices(n, (from, to) -> {
                for (int off = from; off < to; off += PIECE) {
                    int len = Math.min(PIECE, to - off);
                    CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes).asSlice(off, len), shared, off);
                }
                workout.everyOperation(from, blas);
            }));
            System.out.println("WROTE; carriers left in the wrong context " + scramblers.scrambles() + " times");
        }
        System.out.println("CLOSED");
    }

    @FunctionalInterface
    private interface Slice {
        void run(int from, int to);
    }

    /** One task per thread, each over its own slice of {@code n} bytes. */
    private static List<Callable<Void>> slices(int n, Slice body) {
        List<Callable<Void>> tasks = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int from = (int) ((long) n * t / THREADS);
            int to = (int) ((long) n * (t + 1) / THREADS);
            tasks.add(() -> {
                body.run(from, to);
                return null;
            });
        }
        return tasks;
    }
}
