package io.cuwire.ml.naivebayes;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.maxAbsDiff;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.test.TestRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

class MultinomialNBTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        device = MlTesting.device("nb-device");
        host = MlTesting.host("nb-host");
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    /** Documents of 40 words drawn from a per-class word distribution peaked on different words. */
    private record Docs(double[] x, int[] y, int n, int d, int k) {
        static Docs make(SplittableRandom r, int n, int d, int k) {
            double[][] dist = new double[k][d];
            for (int c = 0; c < k; c++) {
                double s = 0;
                for (int j = 0; j < d; j++) {
                    dist[c][j] = (j % k == c ? 6 : 1) * r.nextDouble(0.5, 1.5);
                    s += dist[c][j];
                }
                for (int j = 0; j < d; j++) {
                    dist[c][j] /= s;
                }
            }
            double[] x = new double[n * d];
            int[] y = new int[n];
            for (int i = 0; i < n; i++) {
                y[i] = r.nextInt(k);
                for (int w = 0; w < 40; w++) {
                    double u = r.nextDouble();
                    int j = 0;
                    while (j < d - 1 && (u -= dist[y[i]][j]) >= 0) {
                        j++;
                    }
                    x[i * d + j] += 1;
                }
            }
            return new Docs(x, y, n, d, k);
        }
    }

    @Test
    void shouldMatchTheSmoothedCountsAndClassifyWell(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Docs docs = Docs.make(r, 500, 12, 3);
        double alpha = 0.5;
        try (NdArray x = array(device, DType.FLOAT64, docs.x(), docs.n(), docs.d());
                NdArray y = MlTesting.labels(device, docs.y());
                MultinomialNB nb = new MultinomialNB().alpha(alpha).fit(x, y)) {
            int d = docs.d();
            double[][] fc = new double[3][d];
            double[] cc = new double[3];
            for (int i = 0; i < docs.n(); i++) {
                cc[docs.y()[i]]++;
                for (int j = 0; j < d; j++) {
                    fc[docs.y()[i]][j] += docs.x()[i * d + j];
                }
            }
            double[] flp = values(nb.featureLogProb());
            double[] prior = values(nb.classLogPrior());
            for (int c = 0; c < 3; c++) {
                double total = 0;
                for (int j = 0; j < d; j++) {
                    total += fc[c][j] + alpha;
                }
                for (int j = 0; j < d; j++) {
                    assertEquals(Math.log((fc[c][j] + alpha) / total), flp[c * d + j], 1e-12);
                }
                assertEquals(Math.log(cc[c] / docs.n()), prior[c], 1e-12);
            }
            assertArrayEquals(cc, values(nb.classCount()));
            assertEquals(MemoryKind.DEVICE, nb.featureLogProb().kind());
            assertTrue(nb.score(x, y) > 0.95, "accuracy " + nb.score(x, y));
            try (NdArray p = nb.predictProba(x)) {
                double[] pv = values(p);
                for (int i = 0; i < docs.n(); i++) {
                    assertEquals(1, pv[i * 3] + pv[i * 3 + 1] + pv[i * 3 + 2], 1e-12);
                }
            }
        }
    }

    @Test
    void shouldMergeCountsIntoTheSingleDeviceFit(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Docs docs = Docs.make(r, 400, 8, 4);
        try (NdArray x = array(device, DType.FLOAT32, docs.x(), docs.n(), docs.d());
                NdArray y = MlTesting.labels(device, docs.y());
                MultinomialNB single = new MultinomialNB().fit(x, y);
                MultinomialNB merged = new MultinomialNB().nClasses(4)) {
            long[] cuts = MlTesting.cuts(docs.n(), 2 + r.nextInt(4), r);
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<NdArray> ys = MlTesting.split(y, cuts);
            List<MultinomialNB.Counts> parts = new ArrayList<>();
            for (int p = 0; p < xs.size(); p++) {
                parts.add(merged.partial(xs.get(p), ys.get(p)));
            }
            merged.merge(parts);
            MlTesting.closeAll(parts);
            MlTesting.closeAll(xs);
            MlTesting.closeAll(ys);
            assertArrayEquals(values(single.featureCount()), values(merged.featureCount()), "counts are exact");
            assertTrue(maxAbsDiff(values(single.featureLogProb()), values(merged.featureLogProb())) < 1e-6);
        }
    }

    @Test
    void shouldRefuseNegativeCountsAndPartialsThatDisagreeOnTheClasses() {
        try (NdArray x = array(device, DType.FLOAT64, new double[] {1, -2, 3, 4}, 2, 2);
                NdArray y = MlTesting.labels(device, new int[] {0, 1});
                NdArray x2 = array(device, DType.FLOAT64, new double[] {1, 2, 3, 4}, 2, 2);
                NdArray y2 = MlTesting.labels(device, new int[] {0, 2})) {
            assertEquals(
                    "MultinomialNB.partial: X holds -2.0 (expected: counts >= 0)",
                    assertThrows(IllegalArgumentException.class, () -> new MultinomialNB().fit(x, y))
                            .getMessage());
            MultinomialNB nb = new MultinomialNB();
            try (MultinomialNB.Counts a = nb.partial(x2, y);
                    MultinomialNB.Counts b = nb.partial(x2, y2)) {
                assertTrue(assertThrows(IllegalArgumentException.class, () -> nb.merge(List.of(a, b)))
                        .getMessage()
                        .endsWith("set nClasses so that every partition agrees)"));
            }
        }
    }

    @Test
    void shouldRoundTripThroughTheRegistryAndPredictTheSame(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Docs docs = Docs.make(r, 100, 6, 2);
        TypeRegistry registry = MlTesting.registry();
        try (NdArray x = array(device, DType.FLOAT64, docs.x(), docs.n(), docs.d());
                NdArray y = MlTesting.labels(device, docs.y());
                MultinomialNB nb = new MultinomialNB().fit(x, y);
                NdArray before = nb.predictProba(x)) {
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (MultinomialNB back = MlTesting.roundTrip(registry, nb, family, device, host);
                        NdArray after = back.predictProba(x)) {
                    assertEquals(nb.params(), back.params());
                    assertArrayEquals(values(before), values(after));
                }
            }
        }
    }
}
