package io.cuwire.ml.decomposition;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.gaussian;
import static io.cuwire.ml.MlTesting.maxAbsDiff;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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

class PCATest {
    private static final double[] VARIANCES = {16, 9, 4, 1, 0.25};

    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        device = MlTesting.device("pca-device");
        host = MlTesting.host("pca-host");
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    /** A random rotation (rows orthonormal) by Gram-Schmidt. */
    private static double[] rotation(SplittableRandom r, int d) {
        double[] q = new double[d * d];
        for (int i = 0; i < d; i++) {
            for (int j = 0; j < d; j++) {
                q[i * d + j] = gaussian(r);
            }
            for (int p = 0; p < i; p++) {
                double dot = 0;
                for (int j = 0; j < d; j++) {
                    dot += q[i * d + j] * q[p * d + j];
                }
                for (int j = 0; j < d; j++) {
                    q[i * d + j] -= dot * q[p * d + j];
                }
            }
            double norm = 0;
            for (int j = 0; j < d; j++) {
                norm += q[i * d + j] * q[i * d + j];
            }
            for (int j = 0; j < d; j++) {
                q[i * d + j] /= Math.sqrt(norm);
            }
        }
        return q;
    }

    /** Samples with covariance R^T diag(VARIANCES) R around an offset mean: the axes are the rows of R. */
    private static double[] sample(SplittableRandom r, double[] axes, int n) {
        int d = VARIANCES.length;
        double[] x = new double[n * d];
        for (int i = 0; i < n; i++) {
            for (int c = 0; c < d; c++) {
                double z = Math.sqrt(VARIANCES[c]) * gaussian(r);
                for (int j = 0; j < d; j++) {
                    x[i * d + j] += z * axes[c * d + j];
                }
            }
            for (int j = 0; j < d; j++) {
                x[i * d + j] += 100 + j;
            }
        }
        return x;
    }

    @Test
    void shouldFindTheAxesAndVariancesOfAKnownCovariance(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int d = VARIANCES.length;
        int n = 20_000;
        double[] axes = rotation(r, d);
        double[] data = sample(r, axes, n);
        try (NdArray x = array(device, DType.FLOAT64, data, n, d);
                PCA pca = new PCA().nComponents(3).fit(x)) {
            assertEquals(MemoryKind.DEVICE, pca.components().kind());
            double[] comps = values(pca.components());
            double[] ev = values(pca.explainedVariance());
            for (int c = 0; c < 3; c++) {
                double dot = 0;
                double maxAbs = 0;
                int arg = 0;
                for (int j = 0; j < d; j++) {
                    dot += comps[c * d + j] * axes[c * d + j];
                    if (Math.abs(comps[c * d + j]) > maxAbs) {
                        maxAbs = Math.abs(comps[c * d + j]);
                        arg = j;
                    }
                }
                assertTrue(Math.abs(dot) > 0.995, "component " + c + " along axis " + c + ": |cos| = " + dot);
                assertTrue(comps[c * d + arg] > 0, "scikit-learn's sign convention");
                assertEquals(VARIANCES[c], ev[c], 0.05 * VARIANCES[c], "variance " + c);
            }
            double total = 0;
            for (double v : VARIANCES) {
                total += v;
            }
            assertEquals(VARIANCES[0] / total, values(pca.explainedVarianceRatio())[0], 0.01);
            assertEquals((VARIANCES[3] + VARIANCES[4]) / 2, pca.noiseVariance(), 0.05);
            assertEquals(Math.sqrt(ev[0] * (n - 1)), values(pca.singularValues())[0], 1e-9 * ev[0] * n);
        }
    }

    @Test
    void shouldFindComponentsThatAreEigenvectorsOfTheSampleCovariance(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int d = VARIANCES.length;
        int n = 500;
        double[] data = sample(r, rotation(r, d), n);
        double[] mean = new double[d];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < d; j++) {
                mean[j] += data[i * d + j] / n;
            }
        }
        double[] cov = new double[d * d];
        for (int i = 0; i < n; i++) {
            for (int p = 0; p < d; p++) {
                for (int q = 0; q < d; q++) {
                    cov[p * d + q] += (data[i * d + p] - mean[p]) * (data[i * d + q] - mean[q]) / (n - 1);
                }
            }
        }
        try (NdArray x = array(device, DType.FLOAT64, data, n, d);
                PCA pca = new PCA().fit(x)) {
            double[] comps = values(pca.components());
            double[] ev = values(pca.explainedVariance());
            assertTrue(maxAbsDiff(mean, values(pca.mean())) < 1e-10);
            for (int c = 0; c < d; c++) {
                for (int p = 0; p < d; p++) {
                    double cv = 0;
                    for (int q = 0; q < d; q++) {
                        cv += cov[p * d + q] * comps[c * d + q];
                    }
                    assertEquals(ev[c] * comps[c * d + p], cv, 1e-9, "C v = lambda v");
                }
                for (int c2 = 0; c2 < d; c2++) {
                    double dot = 0;
                    for (int j = 0; j < d; j++) {
                        dot += comps[c * d + j] * comps[c2 * d + j];
                    }
                    assertEquals(c == c2 ? 1 : 0, dot, 1e-10, "orthonormal");
                }
                assertTrue(c == 0 || ev[c] <= ev[c - 1], "descending");
            }
            try (NdArray t = pca.transform(x);
                    NdArray back = pca.inverseTransform(t)) {
                assertTrue(maxAbsDiff(data, values(back)) < 1e-9, "all components: the inverse is exact");
            }
        }
    }

    @Test
    void shouldGiveWhitenedProjectionsUnitVariance(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int d = VARIANCES.length;
        int n = 1000;
        double[] data = sample(r, rotation(r, d), n);
        try (NdArray x = array(device, DType.FLOAT32, data, n, d);
                PCA pca = new PCA().nComponents(2).whiten(true).fit(x);
                NdArray t = pca.transform(x)) {
            double[] tv = values(t);
            for (int c = 0; c < 2; c++) {
                double s = 0;
                double ss = 0;
                for (int i = 0; i < n; i++) {
                    s += tv[i * 2 + c];
                    ss += tv[i * 2 + c] * tv[i * 2 + c];
                }
                assertEquals(0, s / n, 1e-3);
                assertEquals(1, ss / (n - 1), 1e-3);
            }
        }
    }

    @Test
    void shouldMergePartialsIntoTheSingleDeviceFit(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int d = VARIANCES.length;
        int n = 2000;
        double[] data = sample(r, rotation(r, d), n);
        try (NdArray x = array(device, DType.FLOAT64, data, n, d);
                PCA single = new PCA().nComponents(4).fit(x);
                PCA merged = new PCA().nComponents(4)) {
            List<NdArray> xs = MlTesting.split(x, MlTesting.cuts(n, 2 + r.nextInt(5), r));
            List<PcaStats> parts = new ArrayList<>();
            for (NdArray xp : xs) {
                parts.add(merged.partial(xp));
            }
            merged.merge(parts);
            MlTesting.closeAll(parts);
            MlTesting.closeAll(xs);
            assertTrue(maxAbsDiff(values(single.components()), values(merged.components())) < 1e-8);
            assertTrue(maxAbsDiff(values(single.explainedVariance()), values(merged.explainedVariance())) < 1e-9);
            assertTrue(maxAbsDiff(values(single.mean()), values(merged.mean())) < 1e-11);
        }
    }

    @Test
    void shouldRoundTripThroughTheRegistryAndTransformTheSame(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int d = VARIANCES.length;
        double[] data = sample(r, rotation(r, d), 300);
        TypeRegistry registry = MlTesting.registry();
        try (NdArray x = array(device, DType.FLOAT64, data, 300, d);
                PCA pca = new PCA().nComponents(2).whiten(true).fit(x);
                NdArray before = pca.transform(x)) {
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (PCA back = MlTesting.roundTrip(registry, pca, family, device, host);
                        NdArray after = back.transform(x)) {
                    assertEquals(pca.params(), back.params());
                    assertEquals(MemoryKind.DEVICE, back.components().kind());
                    assertEquals(pca.noiseVariance(), back.noiseVariance());
                    assertArrayEquals(values(before), values(after));
                }
            }
        }
    }
}
