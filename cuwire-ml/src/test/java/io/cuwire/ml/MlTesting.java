package io.cuwire.ml;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.ml.types.MlTypes;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;

/** Shared helpers of the ml tests: memory, synthetic data, partitions and serialization round trips. */
public final class MlTesting {
    private MlTesting() {}

    /**
     * Skips the calling test unless the process's devices are emulated: where a GPU is present (and cuwire-cuda is on
     * the class path, as in cuwire-ml-cuda's tests or the GPU bundle), {@link Devices} picks CUDA, and tests of the CPU
     * backend on emulated-device memory do not apply.
     */
    public static void assumeEmulatedDevices() {
        Assumptions.assumeTrue(
                Devices.platform().equals("emulated"),
                () -> "the devices are " + Devices.platform() + ", not emulated");
    }

    /** An allocator of device memory (device 0): emulated, or CUDA where a GPU is present. */
    public static BufferAllocator<DeviceBuffer> device(String name) {
        return Devices.get(0).newAllocator(name, BufferAllocator.UNLIMITED);
    }

    /** An allocator of host memory. */
    public static BufferAllocator<HostBuffer> host(String name) {
        return BufferAllocator.host(name, BufferAllocator.UNLIMITED);
    }

    /** A new array holding {@code v} in {@code dtype} (a float dtype). */
    public static NdArray array(BufferAllocator<?> mem, DType dtype, double[] v, long... shape) {
        return HostArrays.upload(mem, dtype, v, shape);
    }

    /** A new int32 array. */
    public static NdArray labels(BufferAllocator<?> mem, int[] v) {
        return NdArray.fromArray(mem, v, v.length);
    }

    /** The elements of any float or integer array as doubles. */
    public static double[] values(NdArray a) {
        return HostArrays.numbers(a);
    }

    /** Uniform values in [-1, 1). */
    public static double[] uniform(SplittableRandom random, int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextDouble(-1, 1);
        }
        return v;
    }

    /** Standard normal values. */
    public static double[] gaussian(SplittableRandom random, int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = gaussian(random);
        }
        return v;
    }

    /** One standard normal value. */
    public static double gaussian(SplittableRandom random) {
        double u = random.nextDouble();
        double w = random.nextDouble();
        return Math.sqrt(-2 * Math.log1p(-u)) * Math.cos(2 * Math.PI * w);
    }

    /** Row boundaries cutting {@code rows} into {@code parts} partitions of unequal sizes, each at least one row. */
    public static long[] cuts(long rows, int parts, SplittableRandom random) {
        long[] cuts = new long[parts + 1];
        cuts[parts] = rows;
        for (int p = 1; p < parts; p++) {
            long base = rows * p / parts;
            long jitter = rows / (4L * parts);
            cuts[p] = Math.max(cuts[p - 1] + 1, base + (jitter > 0 ? random.nextLong(-jitter, jitter + 1) : 0));
        }
        return cuts;
    }

    /**
     * Row views of C-order {@code x} between {@code cuts}: what the workers of a cluster would hold. Views: the
     * caller closes them and keeps {@code x} open meanwhile.
     */
    public static List<NdArray> split(NdArray x, long[] cuts) {
        long rowElements = x.rank() == 2 ? x.dim(1) : 1;
        int es = x.dtype().byteSize();
        List<NdArray> out = new ArrayList<>();
        for (int p = 0; p + 1 < cuts.length; p++) {
            long n = cuts[p + 1] - cuts[p];
            long[] shape = x.rank() == 2 ? new long[] {n, x.dim(1)} : new long[] {n};
            out.add(NdArray.view(x.buffer(), cuts[p] * rowElements * es, x.dtype(), Order.C, shape));
        }
        return out;
    }

    /** Closes every element. */
    public static void closeAll(List<? extends AutoCloseable> items) {
        for (AutoCloseable c : items) {
            try {
                c.close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** A registry holding the ml types. */
    public static TypeRegistry registry() {
        return MlTypes.register(new TypeRegistry());
    }

    /**
     * Serializes {@code value} with {@code family}, moves the header bytes and each frame into the receiver's
     * memory (device frames into {@code device}, host frames into {@code host}), and deserializes: what a transport
     * does between two processes.
     */
    public static <T> T roundTrip(
            TypeRegistry registry,
            T value,
            Family family,
            BufferAllocator<DeviceBuffer> device,
            BufferAllocator<HostBuffer> host) {
        try (Serialized s = registry.serialize(value, family)) {
            Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            List<Buffer> received = new ArrayList<>();
            for (int i = 0; i < header.frames().size(); i++) {
                long length = header.frames().get(i).length();
                Buffer b = header.frames().get(i).kind() == MemoryKind.DEVICE
                        ? device.allocate(length)
                        : host.allocate(length);
                received.add(b);
                CopyEngine.copy(s.frames().get(i).buffer(), b);
            }
            try (Serialized wire = Serialized.received(header, received)) {
                @SuppressWarnings("unchecked")
                Class<T> type = (Class<T>) value.getClass();
                return registry.deserialize(wire, type, new DecodeTarget(device, host, Limits.DEFAULT));
            }
        }
    }

    /** The largest absolute difference. */
    public static double maxAbsDiff(double[] a, double[] b) {
        if (a.length != b.length) {
            throw new AssertionError("lengths " + a.length + " and " + b.length);
        }
        double m = 0;
        for (int i = 0; i < a.length; i++) {
            m = Math.max(m, Math.abs(a[i] - b[i]));
        }
        return m;
    }
}
