package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static io.cuwire.cuda.CudaTestSupport.assumeGpus;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.IpcHandle;
import io.cuwire.test.ChildJvm;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every device operation from threads that do not hold the device's context: fresh platform threads, virtual
 * threads that park on the staging lock and resume on other carriers (while other virtual threads keep leaving the
 * carriers in the wrong context), the common fork-join pool, and a second process working on the same GPU. Each
 * thread is left in the wrong context (none, or another device's) before its work, so a driver call that relied on
 * a context made current earlier, rather than by {@link Driver}'s gate right before it, fails with
 * {@code CUDA_ERROR_INVALID_CONTEXT}. Seeds are fixed.
 */
@Tag("gpu")
class CudaContextThreadsTest {
    private static final int VIRTUAL_THREADS = 64;

    private CudaDevice gpu;
    private List<CudaDevice> devices;
    private BufferAllocator<DeviceBuffer> memory;
    private BufferAllocator<HostBuffer> pinned;
    private DeviceStream stream;
    private CuBlas blas;
    private DeviceWorkout workout;

    @BeforeEach
    void setUp() {
        assumeCuda();
        devices = DeviceWorkout.devices();
        gpu = devices.getFirst();
        memory = gpu.newAllocator("test/context-threads", BufferAllocator.UNLIMITED);
        pinned = gpu.newPinnedAllocator("test/context-threads-pinned", BufferAllocator.UNLIMITED);
        stream = gpu.newStream();
        try {
            blas = CuBlas.create(stream);
        } catch (CudaException e) {
            assumeTrue(!e.getMessage().startsWith("cuBLAS not found"), e.getMessage());
            throw e;
        }
        workout = new DeviceWorkout(gpu, memory, pinned);
    }

    @AfterEach
    void closeAndCheckForLeaks() {
        if (blas != null) {
            blas.close();
        }
        if (stream != null) {
            stream.close();
        }
        if (memory != null) {
            memory.close();
            pinned.close();
        }
    }

    private static List<Callable<Void>> tasks(int n, TaskBody body) {
        List<Callable<Void>> tasks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int index = i;
            tasks.add(() -> {
                body.run(index);
                return null;
            });
        }
        return tasks;
    }

    @FunctionalInterface
    private interface TaskBody {
        void run(int index) throws Exception;
    }

    @Test
    void shouldRunEveryDeviceOperationFromFreshPlatformThreads() throws Exception {
        try (ExecutorService threads =
                Executors.newThreadPerTaskExecutor(Thread.ofPlatform().factory())) {
            DeviceWorkout.runAll(threads, tasks(8, i -> {
                DeviceWorkout.scramble(devices, i);
                try (DeviceStream own = gpu.newStream();
                        CuBlas ownBlas = CuBlas.create(own)) {
                    workout.everyOperation(100 + i, ownBlas);
                    DeviceWorkout.scramble(devices, i + 1);
                    workout.everyOperation(200 + i, blas);
                }
            }));
            DeviceWorkout.runAll(threads, tasks(1, i -> {
                DeviceWorkout.scramble(devices, i);
                Cuda.trimPool(gpu);
            }));
        }
    }

    @Test
    void shouldRunEveryDeviceOperationFromVirtualThreadsThatResumeOnOtherCarriers() throws Exception {
        try (DeviceWorkout.Scramblers scramblers = new DeviceWorkout.Scramblers(4, devices);
                ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            DeviceWorkout.runAll(threads, tasks(VIRTUAL_THREADS, i -> {
                DeviceWorkout.scramble(devices, i);
                workout.everyOperation(300 + i, blas);
            }));
            assertTrue(scramblers.scrambles() > 0, "the scramblers ran");
        }
    }

    @Test
    void shouldCopyScalarsThroughTheStagingBufferFromManyContendingVirtualThreads() throws Exception {
        int rounds = 200;
        List<String> moved = new ArrayList<>();
        try (DeviceWorkout.Scramblers scramblers = new DeviceWorkout.Scramblers(4, devices);
                ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            DeviceWorkout.runAll(threads, tasks(VIRTUAL_THREADS, i -> {
                String before = carrier();
                workout.stagedScalars(1000 + i, rounds, devices);
                String after = carrier();
                if (!before.equals(after)) {
                    synchronized (moved) {
                        moved.add(before + " -> " + after);
                    }
                }
            }));
            System.out.println(VIRTUAL_THREADS + " virtual threads x " + rounds + " staged scalar round trips: "
                    + moved.size() + " ended on another carrier than they began on; carriers left in the wrong"
                    + " context " + scramblers.scrambles() + " times");
        }
    }

    /** The carrier a virtual thread runs on, from its name (for the printed diagnostic only). */
    private static String carrier() {
        String s = Thread.currentThread().toString();
        return s.substring(s.indexOf('@') + 1);
    }

    @Test
    void shouldRunEveryDeviceOperationFromTheCommonForkJoinPool() throws Exception {
        ForkJoinPool common = ForkJoinPool.commonPool();
        List<Callable<Void>> tasks = tasks(16, i -> {
            DeviceWorkout.scramble(devices, i);
            workout.everyOperation(400 + i, blas);
            workout.stagedScalars(500 + i, 20, devices);
        });
        DeviceWorkout.runAll(common, tasks);
    }

    @Test
    void shouldSwitchBetweenDevicesOnOneThreadInEitherOrder() throws Exception {
        assumeGpus(2);
        CudaDevice other = devices.get(1);
        try (BufferAllocator<DeviceBuffer> otherMemory =
                        other.newAllocator("test/context-threads-1", BufferAllocator.UNLIMITED);
                BufferAllocator<HostBuffer> otherPinned =
                        other.newPinnedAllocator("test/context-threads-pinned-1", BufferAllocator.UNLIMITED);
                DeviceStream otherStream = other.newStream();
                CuBlas otherBlas = CuBlas.create(otherStream);
                DeviceWorkout.Scramblers scramblers = new DeviceWorkout.Scramblers(4, devices);
                ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            DeviceWorkout second = new DeviceWorkout(other, otherMemory, otherPinned);
            DeviceWorkout.runAll(threads, tasks(16, i -> {
                for (int round = 0; round < 3; round++) {
                    workout.everyOperation(600 + 10 * i + round, blas);
                    second.everyOperation(700 + 10 * i + round, otherBlas);
                    peerRoundTrip(other, otherMemory, 800 + 10 * i + round);
                }
            }));
            assertTrue(scramblers.scrambles() > 0, "the scramblers ran");
        }
    }

    /** Bytes from device 0 to {@code other} and back, by peer copies, checked. */
    private void peerRoundTrip(CudaDevice other, BufferAllocator<DeviceBuffer> otherMemory, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        byte[] data = new byte[4096 + r.nextInt(4096)];
        r.nextBytes(data);
        byte[] back = new byte[data.length];
        try (DeviceBuffer here = memory.allocate(data.length);
                DeviceBuffer there = otherMemory.allocate(data.length)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), here, 0);
            CopyEngine.copy(here, there);
            gpu.memset(here, 0, data.length, (byte) 0);
            CopyEngine.copy(there, here);
            CopyEngine.copyToSegment(here, 0, MemorySegment.ofArray(back));
        }
        assertArrayEquals(data, back, "peer round trip through " + other);
    }

    @Test
    void shouldShareOneGpuWithAnotherProcessWhileBothWorkFromVirtualThreads() throws Exception {
        int n = 4 << 20;
        byte[] data = new byte[n];
        new SplittableRandom(7).nextBytes(data);
        CRC32 crc = new CRC32();
        crc.update(data);
        try (DeviceBuffer shared = memory.allocate(n)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), shared, 0);
            IpcHandle handle = gpu.exportHandle(shared);
            String output;
            int exit;
            try (ChildJvm child = ChildJvm.builder(SharedGpuChild.class)
                    .withoutInheritedProperties()
                    .args(
                            HexFormat.of().formatHex(handle.handle()),
                            String.valueOf(handle.deviceOrdinal()),
                            String.valueOf(handle.offset()),
                            String.valueOf(handle.length()),
                            String.valueOf(crc.getValue()))
                    .start()) {
                try (DeviceWorkout.Scramblers scramblers = new DeviceWorkout.Scramblers(4, devices);
                        ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                    DeviceWorkout.runAll(threads, tasks(32, i -> {
                        workout.everyOperation(900 + i, blas);
                        workout.stagedScalars(950 + i, 50, devices);
                    }));
                    assertTrue(scramblers.scrambles() > 0, "the scramblers ran");
                }
                exit = child.awaitExit(Duration.ofSeconds(240));
                output = child.output();
            }
            System.out.println("child output:\n" + output);
            assertEquals(0, exit, output);
            assertTrue(output.contains("READ " + crc.getValue() + " ON cuda0"), output);
            assertTrue(output.contains("CLOSED"), output);
            byte[] expected = data.clone();
            for (int i = 0; i < n; i++) {
                expected[i] = (byte) ~expected[i];
            }
            byte[] back = new byte[n];
            CopyEngine.copyToSegment(shared, 0, MemorySegment.ofArray(back));
            assertArrayEquals(expected, back, "the child's complement, written through its mapping");
        }
    }
}
