package io.cuwire.ml.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.BinaryOp;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.Reduction;
import io.cuwire.test.TestRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** The CPU backend's results do not depend on its threads: the same bits on 1, 3 and a caller's pool of 2. */
class CpuParallelTest {
    private final int threads = ComputeBackends.cpuThreads();

    @AfterEach
    void restoreThreads() {
        ComputeBackends.setCpuThreads(threads);
    }

    @Test
    void shouldGiveTheSameBitsInEveryChunkedOperationOnAnyNumberOfThreads(TestInfo info) {
        long seed = TestRandom.seed(TestRandom.name(info));
        ComputeBackends.setCpuThreads(1);
        List<double[]> one = run(seed);
        ComputeBackends.setCpuThreads(3);
        List<double[]> three = run(seed);
        List<double[]> pool;
        try (ForkJoinPool caller = new ForkJoinPool(2)) {
            pool = caller.submit(() -> run(seed)).join();
        }
        assertEquals(one.size(), three.size());
        for (int i = 0; i < one.size(); i++) {
            assertArrayEquals(one.get(i), three.get(i), "result " + i + ", 1 vs 3 threads");
            assertArrayEquals(one.get(i), pool.get(i), "result " + i + ", 1 thread vs a caller's pool of 2");
        }
    }

    /** Every operation that sums over rows in chunks, on shapes of many chunks; the results as doubles. */
    private static List<double[]> run(long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int n = 9_001;
        int d = 37;
        ComputeBackend b = CpuBackend.instance();
        List<double[]> out = new ArrayList<>();
        try (BufferAllocator<HostBuffer> mem = BufferAllocator.host("cpu-parallel", BufferAllocator.UNLIMITED);
                NdArray x = HostArrays.upload(mem, DType.FLOAT64, random(r, n * d), n, d);
                NdArray y = HostArrays.upload(mem, DType.FLOAT64, random(r, n), n);
                NdArray q = HostArrays.upload(mem, DType.FLOAT64, random(r, 300 * d), 300, d);
                NdArray w = HostArrays.upload(mem, DType.FLOAT64, random(r, 3 * d), 3, d);
                NdArray bias = HostArrays.upload(mem, DType.FLOAT64, new double[] {1, 2, 3}, 3);
                NdArray labels = NdArray.fromArray(mem, labels(r, n), n);
                NdArray gram = NdArray.empty(mem, DType.FLOAT64, Order.C, d, d);
                NdArray xty = NdArray.empty(mem, DType.FLOAT64, Order.C, d);
                NdArray sums = NdArray.empty(mem, DType.FLOAT64, Order.C, d);
                NdArray z = NdArray.empty(mem, DType.FLOAT64, Order.C, n, 3);
                NdArray gw = NdArray.empty(mem, DType.FLOAT64, Order.C, 3, d);
                NdArray dist = NdArray.empty(mem, DType.FLOAT64, Order.C, 300, n)) {
            b.gemm(true, false, 1, x, x, 0, gram);
            out.add(HostArrays.doubles(gram));
            b.gemv(true, 1, x, y, 0, xty);
            out.add(HostArrays.doubles(xty));
            b.columnSums(x, sums);
            out.add(HostArrays.doubles(sums));
            out.add(new double[] {b.reduce(Reduction.SUM, x), b.dot(y, y)});
            b.gemm(false, true, 1, x, w, 0, z);
            b.broadcastRows(BinaryOp.ADD, z, bias);
            out.add(HostArrays.doubles(z));
            out.add(new double[] {b.crossEntropy(z, labels, z)});
            out.add(HostArrays.doubles(z));
            b.gemm(true, false, 1, z, x, 0, gw);
            out.add(HostArrays.doubles(gw));
            b.squaredDistances(q, x, dist);
            out.add(HostArrays.doubles(dist));
            try (NdArray nd = NdArray.empty(mem, DType.FLOAT64, Order.C, 300, 7);
                    NdArray ni = NdArray.empty(mem, DType.INT64, Order.C, 300, 7)) {
                b.kNearestRows(q, x, 5, nd, ni);
                out.add(HostArrays.doubles(nd));
                out.add(Arrays.stream(ni.toLongArray()).asDoubleStream().toArray());
            }
        }
        return out;
    }

    private static double[] random(SplittableRandom r, int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = r.nextDouble(-1, 1);
        }
        return v;
    }

    private static int[] labels(SplittableRandom r, int n) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = r.nextInt(3);
        }
        return v;
    }
}
