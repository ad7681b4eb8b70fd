package io.cuwire.ml.cuda.internal;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.gaussian;
import static io.cuwire.ml.MlTesting.maxAbsDiff;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaTestSupport;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import io.cuwire.test.TestRandom;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each estimator fitted twice on the same random data — on CUDA device memory (the CUDA backend) and on host memory
 * (the CPU backend) — and the two fits' predictions compared. Tolerances, stated per estimator: exact where the
 * result is a selection or a count on well-separated data (cluster labels, neighbor ids and votes, tree walks);
 * within {@code 1e-9} (float64) or {@code 1e-3} (float32) relative for quantities computed by sums in another
 * order (centers, coefficients, variances, reconstructions); within {@code 1e-5} absolute for the probabilities
 * of logistic regression, whose L-BFGS may take a slightly different path to the same optimum (both fits converged
 * to a gradient below {@code 1e-8}).
 */
@Tag("gpu")
class CudaEstimatorsTest {
    private BufferAllocator<DeviceBuffer> gpu;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        CudaTestSupport.assumeCuda();
        gpu = Cuda.device(0).newAllocator("cuda-estimators", BufferAllocator.UNLIMITED);
        host = MlTesting.host("cpu-estimators");
    }

    @AfterEach
    void close() {
        if (gpu != null) {
            gpu.close();
            host.close();
        }
    }

    private static double relTol(DType dt) {
        return dt == DType.FLOAT64 ? 1e-9 : 1e-3;
    }

    /** Asserts {@code |got - want| <= tol (1 + max |want|)} elementwise. */
    private static void assertNear(String what, double[] want, double[] got, double tol) {
        double scale = 1;
        for (double w : want) {
            scale = Math.max(scale, Math.abs(w));
        }
        double diff = maxAbsDiff(want, got);
        assertTrue(diff <= tol * scale, what + ": max difference " + diff + " (tolerance " + tol * scale + ")");
    }

    /** Uniform features with unequal scales, so variances and components are well separated. */
    private static double[] features(SplittableRandom r, int n, int d) {
        double[] x = new double[n * d];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < d; j++) {
                x[i * d + j] = (1 + j) * gaussian(r);
            }
        }
        return x;
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldFindTheSameKMeansClustersOnTheGpu(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 3000;
        int d = 4;
        int k = 6;
        double[] centers = new double[k * d];
        for (int c = 0; c < k; c++) {
            centers[c * d + c % d] = 25.0 * (1 + c / d);
        }
        double[] x = new double[n * d];
        for (int i = 0; i < n; i++) {
            int c = r.nextInt(k);
            for (int j = 0; j < d; j++) {
                x[i * d + j] = centers[c * d + j] + 0.5 * gaussian(r);
            }
        }
        double[] start = new double[k * d];
        for (int c = 0; c < k; c++) {
            for (int j = 0; j < d; j++) {
                start[c * d + j] = centers[c * d + j] + r.nextDouble(-2, 2);
            }
        }
        try (NdArray xg = array(gpu, dt, x, n, d);
                NdArray xh = array(host, dt, x, n, d);
                NdArray ig = array(gpu, dt, start, k, d);
                NdArray ih = array(host, dt, start, k, d);
                KMeans onGpu = new KMeans().nClusters(k).fit(xg, ig);
                KMeans onCpu = new KMeans().nClusters(k).fit(xh, ih);
                NdArray lg = onGpu.predict(xg);
                NdArray lh = onCpu.predict(xh)) {
            assertSame(CudaBackend.class, ComputeBackends.forArray(xg).getClass());
            assertEquals(MemoryKind.DEVICE, onGpu.clusterCenters().kind());
            assertArrayEquals(lh.toIntArray(), lg.toIntArray(), "labels");
            assertNear("centers", values(onCpu.clusterCenters()), values(onGpu.clusterCenters()), relTol(dt));
            assertEquals(onCpu.inertia(), onGpu.inertia(), relTol(dt) * onCpu.inertia(), "inertia");
        }
    }

    /**
     * KMeans predict over wide rows and a row count that leaves a warp partly past the end, for each way the CUDA
     * backend finds the nearest center: the fused kernel for up to 8 and up to 32 centers, GEMM and argmin beyond.
     * The blobs are far apart, so the labels must be equal.
     */
    @ParameterizedTest
    @ValueSource(ints = {8, 20, 40})
    void shouldLabelWideRowsInKMeansPredictAsTheCpuDoes(int k, TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 20_011;
        int d = 64;
        double[] centers = new double[k * d];
        for (int i = 0; i < centers.length; i++) {
            centers[i] = r.nextDouble(-10, 10);
        }
        double[] x = new double[n * d];
        for (int i = 0; i < n; i++) {
            int c = i % k;
            for (int j = 0; j < d; j++) {
                x[i * d + j] = centers[c * d + j] + gaussian(r);
            }
        }
        for (DType dt : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            try (NdArray xg = array(gpu, dt, x, n, d);
                    NdArray xh = array(host, dt, x, n, d);
                    NdArray ig = array(gpu, dt, centers, k, d);
                    NdArray ih = array(host, dt, centers, k, d);
                    KMeans onGpu = new KMeans().nClusters(k).maxIter(3).fit(xg, ig);
                    KMeans onCpu = new KMeans().nClusters(k).maxIter(3).fit(xh, ih);
                    NdArray lg = onGpu.predict(xg);
                    NdArray lh = onCpu.predict(xh)) {
                int[] want = lh.toIntArray();
                assertArrayEquals(want, lg.toIntArray(), "labels " + dt.wireName() + ", " + k + " centers");
                for (int i = 0; i < n; i++) {
                    assertEquals(i % k, want[i], "the CPU's label of row " + i);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldFitTheSameLinearRegressionCoefficientsOnTheGpu(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 2000;
        int d = 5;
        double[] x = features(r, n, d);
        double[] y = new double[n];
        for (int i = 0; i < n; i++) {
            y[i] = 3 + 0.1 * gaussian(r);
            for (int j = 0; j < d; j++) {
                y[i] += (j - 2) * x[i * d + j];
            }
        }
        try (NdArray xg = array(gpu, dt, x, n, d);
                NdArray xh = array(host, dt, x, n, d);
                NdArray yg = array(gpu, dt, y, n);
                NdArray yh = array(host, dt, y, n);
                LinearRegression onGpu = new LinearRegression().fit(xg, yg);
                LinearRegression onCpu = new LinearRegression().fit(xh, yh);
                NdArray pg = onGpu.predict(xg);
                NdArray ph = onCpu.predict(xh)) {
            assertNear("coef", values(onCpu.coef()), values(onGpu.coef()), relTol(dt));
            assertEquals(onCpu.intercept(), onGpu.intercept(), relTol(dt) * 3, "intercept");
            assertNear("predictions", values(ph), values(pg), relTol(dt));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 4})
    void shouldPredictTheSameLogisticRegressionProbabilitiesOnTheGpu(int classes, TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 1500;
        int d = 4;
        double[] x = features(r, n, d);
        int[] y = new int[n];
        for (int i = 0; i < n; i++) {
            double s = x[i * d] - 0.5 * x[i * d + 1] + 0.3 * gaussian(r);
            y[i] = classes == 2 ? (s > 0 ? 1 : 0) : (int) Math.max(0, Math.min(classes - 1, Math.floor(s + 2)));
        }
        DType dt = DType.FLOAT64;
        try (NdArray xg = array(gpu, dt, x, n, d);
                NdArray xh = array(host, dt, x, n, d);
                NdArray yg = MlTesting.labels(gpu, y);
                NdArray yh = MlTesting.labels(host, y);
                LogisticRegression onGpu = new LogisticRegression()
                        .nClasses(classes)
                        .tol(1e-8)
                        .maxIter(1000)
                        .fit(xg, yg);
                LogisticRegression onCpu = new LogisticRegression()
                        .nClasses(classes)
                        .tol(1e-8)
                        .maxIter(1000)
                        .fit(xh, yh);
                NdArray pg = onGpu.predictProba(xg);
                NdArray ph = onCpu.predictProba(xh);
                NdArray lg = onGpu.predict(xg);
                NdArray lh = onCpu.predict(xh)) {
            double[] pc = values(ph);
            assertTrue(
                    onCpu.nIter() < 1000 && onGpu.nIter() < 1000,
                    "both fits converged: " + onCpu.nIter() + ", " + onGpu.nIter() + " iterations");
            assertNear("probabilities", pc, values(pg), 1e-5);
            int[] want = lh.toIntArray();
            int[] got = lg.toIntArray();
            for (int i = 0; i < n; i++) {
                double best = 0;
                double second = 0;
                for (int c = 0; c < classes; c++) {
                    double p = pc[i * classes + c];
                    if (p > best) {
                        second = best;
                        best = p;
                    } else if (p > second) {
                        second = p;
                    }
                }
                if (best - second > 1e-4) {
                    assertEquals(want[i], got[i], "label of row " + i);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldFindTheSamePcaSubspaceOnTheGpu(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 2000;
        int d = 6;
        double[] x = features(r, n, d);
        try (NdArray xg = array(gpu, dt, x, n, d);
                NdArray xh = array(host, dt, x, n, d);
                PCA onGpu = new PCA().nComponents(3).fit(xg);
                PCA onCpu = new PCA().nComponents(3).fit(xh);
                NdArray tg = onGpu.transform(xg);
                NdArray th = onCpu.transform(xh);
                NdArray bg = onGpu.inverseTransform(tg);
                NdArray bh = onCpu.inverseTransform(th)) {
            assertNear(
                    "explained variance",
                    values(onCpu.explainedVariance()),
                    values(onGpu.explainedVariance()),
                    relTol(dt));
            assertNear("mean", values(onCpu.mean()), values(onGpu.mean()), relTol(dt));
            // components are defined up to sign; the projection onto their span is not
            assertNear("reconstruction", values(bh), values(bg), relTol(dt));
        }
    }

    /**
     * The estimator bench's case (issue 22's defect): queries that are training rows, 32 Gaussian features, float64.
     * Both backends recompute the chosen neighbors' distances as the same fused sums of squared differences, so the
     * GPU must give the CPU backend's ids and distances bit for bit (the self-distance 0, not the GEMM form's ~1e-7).
     */
    @Test
    void shouldGiveTheCpusNearestNeighborBitsForQueriesThatAreTrainingRows(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 20_000;
        int q = 500;
        int d = 32;
        double[] x = gaussian(r, n * d);
        double[] qx = Arrays.copyOf(x, q * d);
        try (NdArray xg = array(gpu, DType.FLOAT64, x, n, d);
                NdArray xh = array(host, DType.FLOAT64, x, n, d);
                NdArray qg = array(gpu, DType.FLOAT64, qx, q, d);
                NdArray qh = array(host, DType.FLOAT64, qx, q, d);
                NearestNeighbors nnGpu = new NearestNeighbors().nNeighbors(5).fit(xg);
                NearestNeighbors nnCpu = new NearestNeighbors().nNeighbors(5).fit(xh);
                Neighbors got = nnGpu.kneighbors(qg);
                Neighbors want = nnCpu.kneighbors(qh)) {
            long[] ids = got.ids().toLongArray();
            double[] dist = values(got.distances());
            assertArrayEquals(want.ids().toLongArray(), ids, "ids");
            assertArrayEquals(values(want.distances()), dist, "distances");
            for (int i = 0; i < q; i++) {
                assertEquals(i, ids[i * 5], "query " + i + "'s nearest row: itself");
                assertEquals(0.0, dist[i * 5], "query " + i + "'s distance to itself");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldFindTheSameNeighborRowsAndVotesOnTheGpu(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 1200;
        int q = 300;
        int d = 5;
        int k = 7;
        double[] x = features(r, n, d);
        double[] qx = features(r, q, d);
        int[] y = new int[n];
        for (int i = 0; i < n; i++) {
            y[i] = x[i * d] > 0 ? (x[i * d + 1] > 0 ? 2 : 1) : 0;
        }
        try (NdArray xg = array(gpu, dt, x, n, d);
                NdArray xh = array(host, dt, x, n, d);
                NdArray qg = array(gpu, dt, qx, q, d);
                NdArray qh = array(host, dt, qx, q, d);
                NdArray yg = MlTesting.labels(gpu, y);
                NdArray yh = MlTesting.labels(host, y);
                NearestNeighbors nnGpu = new NearestNeighbors().nNeighbors(k).fit(xg);
                NearestNeighbors nnCpu = new NearestNeighbors().nNeighbors(k).fit(xh);
                Neighbors got = nnGpu.kneighbors(qg);
                Neighbors want = nnCpu.kneighbors(qh);
                KNeighborsClassifier knnGpu =
                        new KNeighborsClassifier().nNeighbors(k).fit(xg, yg);
                KNeighborsClassifier knnCpu =
                        new KNeighborsClassifier().nNeighbors(k).fit(xh, yh);
                NdArray vg = knnGpu.predict(qg);
                NdArray vh = knnCpu.predict(qh)) {
            assertNear(
                    "distances", values(want.distances()), values(got.distances()), dt == DType.FLOAT64 ? 1e-9 : 1e-4);
            long[] wi = want.ids().toLongArray();
            long[] gi = got.ids().toLongArray();
            double[] wd = values(want.distances());
            for (int i = 0; i < wi.length; i++) {
                // float32 distances through a float32 product may order near-equal neighbors differently
                boolean nearTie = i % k > 0 && wd[i] - wd[i - 1] < 1e-3 || i % k < k - 1 && wd[i + 1] - wd[i] < 1e-3;
                if (dt == DType.FLOAT64 || !nearTie) {
                    assertEquals(wi[i], gi[i], "neighbor " + i % k + " of query " + i / k);
                }
            }
            int[] lw = vh.toIntArray();
            int[] lg = vg.toIntArray();
            int same = 0;
            for (int i = 0; i < q; i++) {
                same += lw[i] == lg[i] ? 1 : 0;
            }
            assertEquals(dt == DType.FLOAT64 ? q : same, same, "votes");
            assertTrue(same >= q * 0.98, same + " of " + q + " votes agree");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldPredictTheSameWithRandomForestsOnTheGpu(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 1500;
        int d = 5;
        double[] x = features(r, n, d);
        int[] y = new int[n];
        double[] t = new double[n];
        for (int i = 0; i < n; i++) {
            y[i] = x[i * d] + x[i * d + 2] > 0 ? 1 : (x[i * d + 1] > 1 ? 2 : 0);
            t[i] = Math.sin(x[i * d]) + 0.5 * x[i * d + 3];
        }
        long seed = r.nextLong();
        try (NdArray xg = array(gpu, dt, x, n, d);
                NdArray xh = array(host, dt, x, n, d);
                NdArray yg = MlTesting.labels(gpu, y);
                NdArray yh = MlTesting.labels(host, y);
                NdArray tg = array(gpu, dt, t, n);
                NdArray th = array(host, dt, t, n);
                RandomForestClassifier cg = new RandomForestClassifier()
                        .nEstimators(16)
                        .maxDepth(8)
                        .seed(seed)
                        .fit(xg, yg);
                RandomForestClassifier ch = new RandomForestClassifier()
                        .nEstimators(16)
                        .maxDepth(8)
                        .seed(seed)
                        .fit(xh, yh);
                // exact splits: the same trees grown on the host for both, so that this compares the prediction; the
                // binned fit on the GPU adds target sums in no fixed order (CudaForestFitTest bounds its quality)
                RandomForestRegressor rg = new RandomForestRegressor()
                        .nEstimators(16)
                        .maxDepth(8)
                        .seed(seed)
                        .exactSplits(true)
                        .fit(xg, tg);
                RandomForestRegressor rh = new RandomForestRegressor()
                        .nEstimators(16)
                        .maxDepth(8)
                        .seed(seed)
                        .exactSplits(true)
                        .fit(xh, th);
                NdArray pg = cg.predictProba(xg);
                NdArray ph = ch.predictProba(xh);
                NdArray lg = cg.predict(xg);
                NdArray lh = ch.predict(xh);
                NdArray vg = rg.predict(xg);
                NdArray vh = rh.predict(xh)) {
            assertEquals(MemoryKind.DEVICE, cg.forest().kind(), "the forest lives on the GPU");
            double tol = dt == DType.FLOAT64 ? 1e-12 : 1e-6;
            assertNear("class probabilities", values(ph), values(pg), tol);
            assertArrayEquals(lh.toIntArray(), lg.toIntArray(), "classes");
            assertNear("regression", values(vh), values(vg), tol);
        }
    }
}
