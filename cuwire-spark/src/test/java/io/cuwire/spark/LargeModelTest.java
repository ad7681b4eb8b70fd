package io.cuwire.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.spark.internal.FrameStreams;
import io.cuwire.spark.internal.Node;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.File;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model of one frame larger than 2 GiB ({@code cuwire.spark.largeMiB}, default 2100 MiB of float64): broadcast
 * to both executors and read there on both sides of the 2 GiB boundary, then written to a frame-stream file (what
 * model save does) and read back. Needs about four copies of the model in shared memory (driver, two executors, the
 * read-back) and one on disk; skipped, with the reason, where {@code /dev/shm} or the disk has less.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class LargeModelTest {
    private static final long MIB = 1L << 20;

    /** Element {@code i} of the model. */
    static double at(long i) {
        return (double) (i % 1_000_003);
    }

    /** The positions the test reads: the start, both sides of 2 GiB, the end. */
    static long[] probes(long n) {
        long boundary = (1L << 31) / 8;
        return new long[] {0, 1, boundary - 1, boundary, boundary + 1, n - 1};
    }

    static double[] read(NdArray a, long[] positions) {
        double[] out = new double[positions.length];
        double[] one = new double[1];
        for (int i = 0; i < positions.length; i++) {
            a.copyStorageTo(positions[i], one, 0, 1);
            out[i] = one[0];
        }
        return out;
    }

    @Test
    void shouldBroadcastUseSaveAndLoadAModelOverTwoGib(@TempDir Path dir) throws Exception {
        long mib = Long.getLong("cuwire.spark.largeMiB", 2100);
        long bytes = mib * MIB;
        Assumptions.assumeTrue(bytes > (1L << 31), "cuwire.spark.largeMiB=" + mib + " does not cross 2 GiB");
        long shm = new File("/dev/shm").getUsableSpace();
        long disk = dir.toFile().getUsableSpace();
        Assumptions.assumeTrue(
                shm > 4 * bytes + (2L << 30) && disk > bytes + (2L << 30),
                "needs " + 4 * mib + " MiB of /dev/shm and " + mib + " MiB of disk; has " + shm / MIB + " and "
                        + disk / MIB);
        long n = bytes / 8;
        long[] probes = probes(n);
        double[] expected = new double[probes.length];
        for (int i = 0; i < probes.length; i++) {
            expected[i] = at(probes[i]);
        }
        Node node = Node.current();
        try (NdArray model = NdArray.empty(CuwireSpark.deviceMemory(), DType.FLOAT64, Order.C, n)) {
            fill(model, node.hostMemory());
            assertArrayEquals(expected, read(model, probes), 0.0);
            JavaSparkContext jsc =
                    JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
            CuwireSpark.executorStats(true);
            try (ModelBroadcast<NdArray> b = CuwireSpark.broadcast(model)) {
                ModelRef<NdArray> ref = b.ref();
                assertEquals(bytes, ref.frameBytes());
                List<Integer> tasks = List.of(0, 1, 2, 3);
                List<double[]> seen = jsc.parallelize(tasks, tasks.size())
                        .map(i -> ref.apply(a -> read(a, probes)))
                        .collect();
                for (double[] s : seen) {
                    assertArrayEquals(expected, s, 0.0);
                }
                long fetchedBytes = 0;
                for (NodeStats s : CuwireSpark.executorStats(false)) {
                    fetchedBytes += s.fetchedBytes();
                }
                assertEquals(bytes * CuwireSpark.executors().size(), fetchedBytes, "each executor fetched it once");
            }
            Path file = dir.resolve("large.cuwire");
            try (Serialized s = node.registry().serialize(model, Family.CUDA, Family.HOST);
                    OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
                FrameStreams.write(s, out, node.hostMemory());
            }
            assertEquals(bytes, Files.size(file) - headerAndMagic(file));
        }
        try (InputStream in = new BufferedInputStream(Files.newInputStream(dir.resolve("large.cuwire")), 1 << 20);
                Serialized s = FrameStreams.read(in, node.frameAllocator(), node.hostMemory(), Limits.DEFAULT);
                NdArray back = node.registry().deserialize(s, NdArray.class, node.target())) {
            assertEquals(n, back.size());
            assertArrayEquals(expected, read(back, probes), 0.0);
        }
    }

    private static long headerAndMagic(Path file) throws Exception {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] head = in.readNBytes(12);
            int length =
                    ((head[8] & 0xff) << 24) | ((head[9] & 0xff) << 16) | ((head[10] & 0xff) << 8) | (head[11] & 0xff);
            return 12L + length;
        }
    }

    /** Fills {@code a} with {@link #at} through a 64 MiB host buffer. */
    private static void fill(NdArray a, BufferAllocator<HostBuffer> host) {
        long piece = 8L << 20;
        List<Long> starts = new ArrayList<>();
        for (long first = 0; first < a.size(); first += piece) {
            starts.add(first);
        }
        try (HostBuffer stage = host.allocate(piece * 8)) {
            for (long first : starts) {
                long count = Math.min(piece, a.size() - first);
                for (long i = 0; i < count; i++) {
                    stage.segment().setAtIndex(ValueLayout.JAVA_DOUBLE, i, at(first + i));
                }
                CopyEngine.copy(stage, 0, a.buffer(), a.byteOffset() + first * 8, count * 8);
            }
        }
    }
}
