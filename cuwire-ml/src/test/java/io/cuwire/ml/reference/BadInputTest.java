package io.cuwire.ml.reference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.NotFittedException;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.ml.neighbors.NearestNeighbors;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Bad input to every estimator: a clear error naming the estimator, the array and what was wrong, and no memory
 * left allocated afterwards (the allocators' balance is checked after each test).
 */
class BadInputTest {
    private static final double[] X = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

    private BufferAllocator<?> host;
    private BufferAllocator<?> device;

    @BeforeEach
    void open() {
        host = MlTesting.host("bad-host");
        device = MlTesting.device("bad-device");
    }

    @AfterEach
    void balance() {
        assertEquals(0, host.allocatedBytes(), "host allocator balance");
        assertEquals(0, device.allocatedBytes(), "device allocator balance");
        host.close();
        device.close();
    }

    private BufferAllocator<?> mem(String where) {
        return where.equals("host") ? host : device;
    }

    private static String message(Class<? extends Throwable> type, Runnable r) {
        return assertThrows(type, r::run).getMessage();
    }

    @ParameterizedTest
    @ValueSource(strings = {"host", "device"})
    void shouldRefuseTargetsOfAnotherLengthThanTheRows(String where) {
        BufferAllocator<?> m = mem(where);
        try (NdArray x = MlTesting.array(m, DType.FLOAT64, X, 6, 2);
                NdArray y = MlTesting.array(m, DType.FLOAT64, new double[5], 5);
                NdArray labels = MlTesting.labels(m, new int[] {0, 1, 0, 1, 0});
                LinearRegression lr = new LinearRegression();
                LogisticRegression log = new LogisticRegression()) {
            assertEquals(
                    "LinearRegression.partial: y has shape (5,) (expected: (6,), one target per sample)",
                    message(IllegalArgumentException.class, () -> lr.fit(x, y)));
            assertEquals(
                    "LogisticRegression.fit: y has shape (5,) (expected: (6,), one label per sample)",
                    message(IllegalArgumentException.class, () -> log.fit(x, labels)));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"host", "device"})
    void shouldRefuseToPredictWithAnotherNumberOfFeatures(String where) {
        BufferAllocator<?> m = mem(where);
        try (NdArray x = MlTesting.array(m, DType.FLOAT64, X, 6, 2);
                NdArray q = MlTesting.array(m, DType.FLOAT64, X, 4, 3);
                NdArray y = MlTesting.array(m, DType.FLOAT64, new double[] {1, 2, 3, 4, 5, 7}, 6);
                Ridge ridge = new Ridge().fit(x, y);
                KMeans km = new KMeans().nClusters(2).fit(x)) {
            assertEquals(
                    "Ridge.predict: X has 3 features (expected: 2, as fitted)",
                    message(
                            IllegalArgumentException.class,
                            () -> ridge.predict(q).close()));
            assertEquals(
                    "KMeans.predict: X has 3 features (expected: 2, as fitted)",
                    message(IllegalArgumentException.class, () -> km.predict(q).close()));
        }
    }

    /** Each estimator's fit on (x, labels or targets), by name. */
    private static void fitEach(NdArray x, NdArray labels, NdArray targets, Consumer<Runnable> check) {
        try (LinearRegression a = new LinearRegression();
                Ridge b = new Ridge();
                LogisticRegression c = new LogisticRegression();
                KMeans d = new KMeans().nClusters(2);
                PCA e = new PCA();
                MultinomialNB f = new MultinomialNB();
                NearestNeighbors g = new NearestNeighbors();
                KNeighborsClassifier h = new KNeighborsClassifier().nNeighbors(2);
                RandomForestClassifier i = new RandomForestClassifier().nEstimators(2);
                RandomForestRegressor j = new RandomForestRegressor().nEstimators(2)) {
            check.accept(() -> a.fit(x, targets));
            check.accept(() -> b.fit(x, targets));
            check.accept(() -> c.fit(x, labels));
            check.accept(() -> d.fit(x));
            check.accept(() -> e.fit(x));
            check.accept(() -> f.fit(x, labels));
            check.accept(() -> g.fit(x));
            check.accept(() -> h.fit(x, labels));
            check.accept(() -> i.fit(x, labels));
            check.accept(() -> j.fit(x, targets));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"host", "device"})
    void shouldRefuseNaNInTrainingDataInEveryEstimatorNamingThePosition(String where) {
        BufferAllocator<?> m = mem(where);
        for (DType dtype : new DType[] {DType.FLOAT64, DType.FLOAT32}) {
            double[] bad = X.clone();
            bad[5] = Double.NaN;
            try (NdArray x = MlTesting.array(m, dtype, bad, 6, 2);
                    NdArray labels = MlTesting.labels(m, new int[] {0, 1, 0, 1, 0, 1});
                    NdArray y = MlTesting.array(m, dtype, new double[6], 6)) {
                fitEach(x, labels, y, fit -> {
                    String msg = message(IllegalArgumentException.class, fit);
                    assertEquals(
                            ": X holds NaN at (2, 1) (expected: finite values)", msg.substring(msg.indexOf(':')), msg);
                });
            }
        }
        try (NdArray x = MlTesting.array(m, DType.FLOAT64, X, 6, 2);
                NdArray y =
                        MlTesting.array(m, DType.FLOAT64, new double[] {0, 0, 0, 0, Double.NEGATIVE_INFINITY, 0}, 6);
                Ridge ridge = new Ridge()) {
            assertEquals(
                    "Ridge.partial: y holds -Infinity at (4,) (expected: finite values)",
                    message(IllegalArgumentException.class, () -> ridge.fit(x, y)));
        }
        double[] inf = X.clone();
        inf[11] = Double.POSITIVE_INFINITY;
        try (NdArray x = MlTesting.array(m, DType.FLOAT32, inf, 6, 2);
                KMeans km = new KMeans().nClusters(2)) {
            assertEquals(
                    "KMeans.fit: X holds Infinity at (5, 1) (expected: finite values)",
                    message(IllegalArgumentException.class, () -> km.fit(x)));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"host", "device"})
    void shouldPassFiniteDataWhoseSumOverflows(String where) {
        try (NdArray x = MlTesting.array(mem(where), DType.FLOAT64, new double[] {1e308, 1e308, 1e308, 1e308}, 2, 2);
                NearestNeighbors nn = new NearestNeighbors().fit(x)) {
            assertEquals(2, nn.fitX().dim(0));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"host", "device"})
    void shouldRefuseMoreClustersOrNeighborsThanRows(String where) {
        BufferAllocator<?> m = mem(where);
        try (NdArray x = MlTesting.array(m, DType.FLOAT64, X, 3, 4);
                NdArray labels = MlTesting.labels(m, new int[] {0, 1, 0});
                KMeans km = new KMeans().nClusters(5);
                KNeighborsClassifier knc = new KNeighborsClassifier().nNeighbors(5);
                NearestNeighbors nn = new NearestNeighbors().fit(x)) {
            assertEquals(
                    "KMeans.fit: nClusters = 5 is more than the 3 rows of X (expected: nClusters <= rows)",
                    message(IllegalArgumentException.class, () -> km.fit(x)));
            assertEquals(
                    "KNeighborsClassifier.fit: nNeighbors = 5 is more than the 3 rows of X (expected: "
                            + "nNeighbors <= rows)",
                    message(IllegalArgumentException.class, () -> knc.fit(x, labels)));
            assertEquals(
                    "NearestNeighbors.kneighbors: k = 5 (expected: 1 <= k <= 3, the training rows)",
                    message(
                            IllegalArgumentException.class,
                            () -> nn.kneighbors(x, 5).close()));
        }
    }

    @Test
    void shouldRefuseToPredictBeforeFitInEveryEstimator() {
        try (NdArray x = MlTesting.array(host, DType.FLOAT64, X, 6, 2)) {
            Estimator[] all = {
                new LinearRegression(),
                new Ridge(),
                new LogisticRegression(),
                new KMeans(),
                new PCA(),
                new MultinomialNB(),
                new NearestNeighbors(),
                new KNeighborsClassifier(),
                new RandomForestClassifier(),
                new RandomForestRegressor()
            };
            for (Estimator e : all) {
                Runnable use = switch (e) {
                    case io.cuwire.ml.Regressor r -> () -> r.predict(x).close();
                    case io.cuwire.ml.Classifier c -> () -> c.predict(x).close();
                    case KMeans k -> () -> k.predict(x).close();
                    case PCA p -> () -> p.transform(x).close();
                    case NearestNeighbors n -> () -> n.kneighbors(x).close();
                    default -> throw new AssertionError(e);
                };
                assertEquals(
                        e.getClass().getSimpleName() + " is not fitted: call fit, or merge partials, before "
                                + "using it",
                        message(NotFittedException.class, use));
            }
        }
    }

    @Test
    void shouldRefuseDataOnAnotherDeviceThanTheModel() {
        try (NdArray xd = MlTesting.array(device, DType.FLOAT64, X, 6, 2);
                NdArray xh = MlTesting.array(host, DType.FLOAT64, X, 6, 2);
                NdArray yd = MlTesting.array(device, DType.FLOAT64, new double[] {1, 2, 3, 4, 5, 7}, 6);
                NdArray labelsHost = MlTesting.labels(host, new int[] {0, 1, 0, 1, 0, 1});
                LinearRegression lr = new LinearRegression().fit(xd, yd);
                PCA pca = new PCA().fit(xd);
                LogisticRegression log = new LogisticRegression()) {
            String dev = ComputeBackend.placeOf(xd);
            assertEquals(
                    "LinearRegression.predict: X is on HOST but the model is on " + dev + " (expected: the data "
                            + "where the model was fitted; copy one to the other)",
                    message(IllegalArgumentException.class, () -> lr.predict(xh).close()));
            assertEquals(
                    "PCA.transform: X is on HOST but the model is on " + dev + " (expected: the data where the "
                            + "model was fitted; copy one to the other)",
                    message(
                            IllegalArgumentException.class,
                            () -> pca.transform(xh).close()));
            assertEquals(
                    "LogisticRegression.fit: y is on HOST but X is on " + dev + " (expected: y where X is)",
                    message(IllegalArgumentException.class, () -> log.fit(xd, labelsHost)));
        }
    }

    @Test
    void shouldRefuseDataOnTheOtherOfTwoDevices() {
        Assumptions.assumeTrue(Devices.all().size() > 1, "one device only");
        try (BufferAllocator<?> other = Devices.get(1).newAllocator("bad-device1", BufferAllocator.UNLIMITED)) {
            try (NdArray x0 = MlTesting.array(device, DType.FLOAT64, X, 6, 2);
                    NdArray x1 = MlTesting.array(other, DType.FLOAT64, X, 6, 2);
                    KMeans km = new KMeans().nClusters(2).fit(x0)) {
                assertEquals(
                        "KMeans.predict: X is on " + ComputeBackend.placeOf(x1) + " but the model is on "
                                + ComputeBackend.placeOf(x0)
                                + " (expected: the data where the model was fitted; copy one "
                                + "to the other)",
                        message(
                                IllegalArgumentException.class,
                                () -> km.predict(x1).close()));
            }
            assertEquals(0, other.allocatedBytes(), "device 1 allocator balance");
        }
    }
}
