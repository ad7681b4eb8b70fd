package io.cuwire.ml.ensemble;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.TransferScope;
import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.MlTesting;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.OpaqueBlob;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

class RandomForestTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        device = MlTesting.device("forest-device");
        host = MlTesting.host("forest-host");
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    /** A 2 x 2 checkerboard in the first two features, two noise features: no linear model separates it. */
    private static double[] checkerboard(SplittableRandom r, int n, int[] y) {
        double[] x = new double[n * 4];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 4; j++) {
                x[i * 4 + j] = r.nextDouble(-1, 1);
            }
            y[i] = (x[i * 4] > 0) ^ (x[i * 4 + 1] > 0) ? 1 : 0;
        }
        return x;
    }

    @Test
    void shouldLearnACheckerboardAsAClassifier(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int[] y = new int[800];
        int[] yt = new int[400];
        double[] train = checkerboard(r, 800, y);
        double[] test = checkerboard(r, 400, yt);
        try (NdArray x = array(device, DType.FLOAT32, train, 800, 4);
                NdArray labels = MlTesting.labels(device, y);
                NdArray xt = array(device, DType.FLOAT32, test, 400, 4);
                NdArray labelsT = MlTesting.labels(device, yt);
                RandomForestClassifier rf = new RandomForestClassifier()
                        .nEstimators(20)
                        .maxDepth(10)
                        .seed(r.nextLong())
                        .fit(x, labels);
                NdArray proba = rf.predictProba(xt)) {
            assertEquals(MemoryKind.DEVICE, rf.forest().kind(), "the forest blob lives on the device");
            assertEquals(ForestLayout.FORMAT, rf.forest().format());
            assertEquals(20, rf.info().trees());
            assertEquals(2, rf.classes());
            double accuracy = rf.score(xt, labelsT);
            assertTrue(accuracy > 0.9, "held-out accuracy " + accuracy);
            double[] p = values(proba);
            for (int i = 0; i < 400; i++) {
                assertEquals(1, p[2 * i] + p[2 * i + 1], 1e-6);
            }
        }
    }

    @Test
    void shouldFitASmoothFunctionAsARegressor(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 1000;
        double[] x = new double[n * 3];
        double[] y = new double[n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 3; j++) {
                x[i * 3 + j] = r.nextDouble(-1, 1);
            }
            y[i] = Math.sin(3 * x[i * 3]) + x[i * 3 + 1] * x[i * 3 + 1];
        }
        long[] cuts = {0, 700, n};
        try (NdArray xa = array(device, DType.FLOAT64, x, n, 3);
                NdArray ya = array(device, DType.FLOAT64, y, n)) {
            List<NdArray> xs = MlTesting.split(xa, cuts);
            List<NdArray> ys = MlTesting.split(ya, cuts);
            try (RandomForestRegressor rf = new RandomForestRegressor()
                    .nEstimators(20)
                    .seed(r.nextLong())
                    .fit(xs.get(0), ys.get(0))) {
                double r2 = rf.score(xs.get(1), ys.get(1));
                assertTrue(r2 > 0.9, "held-out R2 " + r2);
            }
            MlTesting.closeAll(xs);
            MlTesting.closeAll(ys);
        }
    }

    @Test
    void shouldMergeForestsIntoTheConcatenationOfThePartitionsTrees(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 900;
        int[] y = new int[n];
        double[] train = checkerboard(r, n, y);
        long seed = r.nextLong();
        try (NdArray x = array(device, DType.FLOAT64, train, n, 4);
                NdArray labels = MlTesting.labels(device, y)) {
            long[] cuts = MlTesting.cuts(n, 3, r);
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<NdArray> ys = MlTesting.split(labels, cuts);
            RandomForestClassifier rf =
                    new RandomForestClassifier().nEstimators(12).nClasses(2).seed(seed);
            List<OpaqueBlob> parts = new ArrayList<>();
            for (int p = 0; p < 3; p++) {
                parts.add(rf.partial(xs.get(p), ys.get(p), p, 3));
            }
            rf.merge(parts);
            assertEquals(12, rf.info().trees());
            try (NdArray merged = rf.predictProba(x)) {
                double[] want = new double[2 * n];
                for (OpaqueBlob part : parts) {
                    int trees = ForestLayout.info(part).trees();
                    try (RandomForestClassifier one = new RandomForestClassifier().merge(List.of(part));
                            NdArray p = one.predictProba(x)) {
                        double[] pv = values(p);
                        for (int i = 0; i < want.length; i++) {
                            want[i] += pv[i] * trees / 12.0;
                        }
                    }
                }
                assertTrue(MlTesting.maxAbsDiff(want, values(merged)) < 1e-12, "the mean over all 12 trees");
            }
            assertTrue(rf.score(x, labels) > 0.9);
            try (RandomForestClassifier again =
                    new RandomForestClassifier().nEstimators(12).nClasses(2).seed(seed)) {
                List<OpaqueBlob> parts2 = new ArrayList<>();
                for (int p = 0; p < 3; p++) {
                    parts2.add(again.partial(xs.get(p), ys.get(p), p, 3));
                }
                again.merge(parts2);
                MlTesting.closeAll(parts2);
                assertArrayEquals(bytes(rf.forest()), bytes(again.forest()), "a forest is a function of seed and data");
            }
            MlTesting.closeAll(parts);
            MlTesting.closeAll(xs);
            MlTesting.closeAll(ys);
            rf.close();
        }
    }

    private static byte[] bytes(OpaqueBlob blob) {
        byte[] out = new byte[(int) blob.byteSize()];
        CopyEngine.copyToSegment(blob.buffer(), 0, MemorySegment.ofArray(out));
        return out;
    }

    @Test
    void shouldTravelAsOneDeviceFrameAndPredictTheSame(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int[] y = new int[300];
        double[] train = checkerboard(r, 300, y);
        TypeRegistry registry = MlTesting.registry();
        try (NdArray x = array(device, DType.FLOAT64, train, 300, 4);
                NdArray labels = MlTesting.labels(device, y);
                RandomForestClassifier rf =
                        new RandomForestClassifier().nEstimators(8).fit(x, labels);
                NdArray before = rf.predictProba(x)) {
            try (Serialized s = registry.serialize(rf, Family.CUDA)) {
                assertEquals(1, s.frames().size(), "the whole forest is one frame");
                assertEquals(MemoryKind.DEVICE, s.frames().getFirst().kind());
                assertEquals(rf.forest().byteSize(), s.frames().getFirst().length());
            }
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (TransferScope scope = CopyEngine.openScope(family.wireName());
                        RandomForestClassifier back = MlTesting.roundTrip(registry, rf, family, device, host)) {
                    long hostBytes = scope.bytes(CopyDirection.D2H) + scope.bytes(CopyDirection.H2D);
                    assertEquals(family == Family.CUDA ? 0 : 2 * rf.forest().byteSize(), hostBytes);
                    assertEquals(rf.params(), back.params());
                    assertEquals(MemoryKind.DEVICE, back.forest().kind());
                    try (NdArray after = back.predictProba(x)) {
                        assertArrayEquals(values(before), values(after));
                    }
                }
            }
        }
    }

    @Test
    void shouldDecodeWhatItsLayoutEncodes() {
        ForestLayout.Tree stump = new ForestLayout.Tree(
                new int[] {1, -1, -1}, new int[] {1, 0, 1}, new double[] {0.5, 0, 0}, new double[] {0.25, 0.75, 1, 0});
        ForestLayout.Tree leaf =
                new ForestLayout.Tree(new int[] {-1}, new int[] {0}, new double[] {0}, new double[] {0.5, 0.5});
        byte[] bytes = ForestLayout.encode(List.of(stump, leaf), 3, 2);
        ForestLayout.Info info = ForestLayout.infoOf(List.of(stump, leaf), 3, 2);
        assertEquals(new ForestLayout.Info(2, 3, 2, 4, 3), info);
        assertEquals(info.byteSize(), bytes.length);
        assertEquals(ForestLayout.MAGIC, MemorySegment.ofArray(bytes).get(ValueLayout.JAVA_INT_UNALIGNED, 0));
        List<ForestLayout.Tree> back = ForestLayout.decode(bytes, info);
        assertArrayEquals(stump.feature(), back.get(0).feature());
        assertArrayEquals(stump.values(), back.get(0).values());
        assertArrayEquals(leaf.values(), back.get(1).values());
        double[] out = new double[4];
        ForestLayout.predict(MemorySegment.ofArray(bytes), info, new double[] {0, 0.4, 0, 0, 0.6, 0}, 2, out);
        assertArrayEquals(new double[] {0.375, 0.625, 0.75, 0.25}, out);
    }
}
