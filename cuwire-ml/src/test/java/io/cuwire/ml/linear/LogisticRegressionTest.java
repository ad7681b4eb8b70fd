package io.cuwire.ml.linear;

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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LogisticRegressionTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        device = MlTesting.device("logistic-device");
        host = MlTesting.host("logistic-host");
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    /** Overlapping Gaussian classes around {@code k} centers. */
    private record Data(double[] x, int[] y, int n, int d, int k, double[] centers) {
        static Data make(SplittableRandom r, int n, int d, int k, double spread) {
            double[] centers = new double[k * d];
            for (int i = 0; i < centers.length; i++) {
                centers[i] = 2 * gaussian(r);
            }
            double[] x = new double[n * d];
            int[] y = new int[n];
            for (int i = 0; i < n; i++) {
                y[i] = r.nextInt(k);
                for (int j = 0; j < d; j++) {
                    x[i * d + j] = centers[y[i] * d + j] + spread * gaussian(r);
                }
            }
            return new Data(x, y, n, d, k, centers);
        }

        /**
         * The training accuracy of labelling each row with its nearest true center: for classes of one spread, the
         * linear rule a fitted model can be compared with (low too when random centers happen to overlap).
         */
        double nearestCenterAccuracy() {
            int right = 0;
            for (int i = 0; i < n; i++) {
                int best = 0;
                double bestDistance = Double.POSITIVE_INFINITY;
                for (int q = 0; q < k; q++) {
                    double s = 0;
                    for (int j = 0; j < d; j++) {
                        double diff = x[i * d + j] - centers[q * d + j];
                        s += diff * diff;
                    }
                    if (s < bestDistance) {
                        bestDistance = s;
                        best = q;
                    }
                }
                right += best == y[i] ? 1 : 0;
            }
            return (double) right / n;
        }
    }

    /**
     * The gradient of {@code (1/n) sum loss + ||W||² / (2 C n)} at the fitted coefficients, computed here directly
     * from the data in doubles: zero at the optimum.
     */
    private static double[] objectiveGradient(Data data, double[] w, double[] b, double c) {
        int rows = w.length / data.d();
        int d = data.d();
        double[] g = new double[w.length + b.length];
        for (int i = 0; i < data.n(); i++) {
            double[] z = new double[rows];
            for (int r = 0; r < rows; r++) {
                z[r] = b[r];
                for (int j = 0; j < d; j++) {
                    z[r] += w[r * d + j] * data.x()[i * d + j];
                }
            }
            double[] resid = new double[rows];
            if (rows == 1) {
                resid[0] = 1 / (1 + Math.exp(-z[0])) - data.y()[i];
            } else {
                double max = Double.NEGATIVE_INFINITY;
                for (double v : z) {
                    max = Math.max(max, v);
                }
                double s = 0;
                for (double v : z) {
                    s += Math.exp(v - max);
                }
                for (int r = 0; r < rows; r++) {
                    resid[r] = Math.exp(z[r] - max) / s - (data.y()[i] == r ? 1 : 0);
                }
            }
            for (int r = 0; r < rows; r++) {
                for (int j = 0; j < d; j++) {
                    g[r * d + j] += resid[r] * data.x()[i * d + j] / data.n();
                }
                g[w.length + r] += resid[r] / data.n();
            }
        }
        for (int i = 0; i < w.length; i++) {
            g[i] += w[i] / (c * data.n());
        }
        return g;
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 4})
    void shouldReachTheOptimumOfThePenalizedLoss(int k, TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 800, 3, k, 1.5);
        double c = 0.5;
        try (NdArray x = array(device, DType.FLOAT64, data.x(), data.n(), data.d());
                NdArray y = MlTesting.labels(device, data.y());
                LogisticRegression model =
                        new LogisticRegression().c(c).tol(1e-8).fit(x, y)) {
            assertEquals(k, model.classes());
            assertEquals(k == 2 ? 1 : k, model.coef().dim(0), "binary: one row; multinomial: one per class");
            assertEquals(MemoryKind.DEVICE, model.coef().kind());
            double[] g = objectiveGradient(data, values(model.coef()), values(model.intercept()), c);
            for (double v : g) {
                assertEquals(0, v, 1e-6, "the gradient vanishes at the fitted coefficients");
            }
            try (NdArray p = model.predictProba(x);
                    NdArray labels = model.predict(x)) {
                double[] pv = values(p);
                int[] lv = labels.toIntArray();
                for (int i = 0; i < data.n(); i++) {
                    double s = 0;
                    int arg = 0;
                    for (int j = 0; j < k; j++) {
                        s += pv[i * k + j];
                        arg = pv[i * k + j] > pv[i * k + arg] ? j : arg;
                    }
                    assertEquals(1, s, 1e-12, "probabilities sum to 1");
                    assertEquals(arg, lv[i], "the label is the most probable class");
                }
            }
            // Random centers can overlap (seen: 0.56 for k = 4, 0.55 for k = 2), so the sanity bound is the accuracy of
            // the true centers' own rule on the same rows, not chance; optimality above is what this test is about.
            double reference = data.nearestCenterAccuracy();
            assertTrue(
                    model.score(x, y) >= reference - 0.05,
                    "accuracy " + model.score(x, y) + " against the nearest-true-center rule's " + reference);
        }
    }

    @Test
    void shouldSeparateSeparableClassesInFloat32(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 600, 4, 3, 0.2);
        try (NdArray x = array(device, DType.FLOAT32, data.x(), data.n(), data.d());
                NdArray y = MlTesting.labels(device, data.y());
                LogisticRegression model = new LogisticRegression().c(100).fit(x, y)) {
            assertTrue(model.score(x, y) > 0.99, "accuracy " + model.score(x, y));
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void shouldReachTheSingleDeviceFitFromMergedGradients(boolean intercept, TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int k = 2 + r.nextInt(3);
        Data data = Data.make(r, 900, 3, k, 1.0);
        try (NdArray x = array(device, DType.FLOAT64, data.x(), data.n(), data.d());
                NdArray y = MlTesting.labels(device, data.y());
                LogisticRegression single = new LogisticRegression()
                        .fitIntercept(intercept)
                        .tol(1e-9)
                        .fit(x, y);
                LogisticRegression merged =
                        new LogisticRegression().fitIntercept(intercept).tol(1e-9)) {
            long[] cuts = MlTesting.cuts(data.n(), 2 + r.nextInt(4), r);
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<NdArray> ys = MlTesting.split(y, cuts);
            try (LogisticRegression.Solver solver = merged.solver(data.d(), k, DType.FLOAT64, device)) {
                while (!solver.done()) {
                    List<LogisticRegression.Gradient> parts = new ArrayList<>();
                    for (int p = 0; p < xs.size(); p++) {
                        parts.add(merged.partialGradient(xs.get(p), ys.get(p), solver.coef(), solver.intercept()));
                    }
                    solver.update(parts);
                    MlTesting.closeAll(parts);
                }
                solver.finish();
            }
            MlTesting.closeAll(xs);
            MlTesting.closeAll(ys);
            // Both reach the optimum of the same objective. The multinomial intercepts are unique only up to a
            // common shift (softmax is invariant to it and they are not penalized), and the partition sums add up
            // in another order than the single fit's, so compare optimality and predictions, not raw coefficients.
            for (LogisticRegression model : List.of(single, merged)) {
                double[] w = values(model.coef());
                double[] g = objectiveGradient(data, w, values(model.intercept()), 1.0);
                int checked = intercept ? g.length : w.length;
                // L-BFGS stops on the relative change of the objective; gradients up to ~2e-6 were seen at the
                // stop (C = 1, overlapping classes), so optimality is checked at 1e-5 here.
                for (int i = 0; i < checked; i++) {
                    assertEquals(0, g[i], 1e-5, "the gradient vanishes at the fitted coefficients: " + i);
                }
            }
            try (NdArray ps = single.predictProba(x);
                    NdArray pm = merged.predictProba(x)) {
                assertTrue(maxAbsDiff(values(ps), values(pm)) < 1e-5, "probabilities of single and merged fits");
            }
            if (!intercept) {
                assertArrayEquals(new double[single.intercept().toDoubleArray().length], values(merged.intercept()));
            }
        }
    }

    @Test
    void shouldRoundTripThroughTheRegistryAndPredictTheSame(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 200, 3, 3, 1.0);
        TypeRegistry registry = MlTesting.registry();
        try (NdArray x = array(device, DType.FLOAT64, data.x(), data.n(), data.d());
                NdArray y = MlTesting.labels(device, data.y());
                LogisticRegression model = new LogisticRegression().c(2).fit(x, y);
                NdArray before = model.predictProba(x)) {
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (LogisticRegression back = MlTesting.roundTrip(registry, model, family, device, host);
                        NdArray after = back.predictProba(x)) {
                    assertEquals(model.params(), back.params());
                    assertEquals(3, back.classes());
                    assertEquals(MemoryKind.DEVICE, back.coef().kind());
                    assertArrayEquals(values(before), values(after));
                }
            }
        }
    }
}
