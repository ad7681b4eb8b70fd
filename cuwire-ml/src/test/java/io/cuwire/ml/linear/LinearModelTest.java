package io.cuwire.ml.linear;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.gaussian;
import static io.cuwire.ml.MlTesting.maxAbsDiff;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.NotFittedException;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.test.TestRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LinearModelTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        device = MlTesting.device("linear-device");
        host = MlTesting.host("linear-host");
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    /** Samples around a far-off mean (so centering matters), targets {@code x w + b + noise}. */
    private record Data(double[] x, double[] y, double[] w, double b, int n, int d) {
        static Data make(SplittableRandom r, int n, int d, double noise) {
            double[] w = new double[d];
            for (int j = 0; j < d; j++) {
                w[j] = r.nextDouble(-3, 3);
            }
            double b = r.nextDouble(-5, 5);
            double[] x = new double[n * d];
            double[] y = new double[n];
            for (int i = 0; i < n; i++) {
                double s = b;
                for (int j = 0; j < d; j++) {
                    x[i * d + j] = 10 + 2 * gaussian(r);
                    s += w[j] * x[i * d + j];
                }
                y[i] = s + noise * gaussian(r);
            }
            return new Data(x, y, w, b, n, d);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldRecoverTheCoefficientsOfNoiselessLinearData(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 300, 5, 0);
        double tol = dt == DType.FLOAT64 ? 1e-8 : 2e-2;
        try (NdArray x = array(device, dt, data.x(), data.n(), data.d());
                NdArray y = array(device, dt, data.y(), data.n());
                LinearRegression model = new LinearRegression().fit(x, y)) {
            assertTrue(maxAbsDiff(data.w(), values(model.coef())) < tol / 10, "coef " + model.coef());
            assertEquals(data.b(), model.intercept(), tol * 10);
            assertEquals(MemoryKind.DEVICE, model.coef().kind(), "state stays on the device it was fitted on");
            assertEquals(dt, model.coef().dtype());
            assertEquals(1.0, model.score(x, y), dt == DType.FLOAT64 ? 1e-12 : 1e-4);
            try (NdArray p = model.predict(x)) {
                assertEquals(MemoryKind.DEVICE, p.kind());
                assertTrue(maxAbsDiff(data.y(), values(p)) < tol * 10);
            }
        }
    }

    @Test
    void shouldFitThroughTheOriginWithoutAnIntercept(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 200, 3, 0);
        double[] y = data.y().clone();
        for (int i = 0; i < y.length; i++) {
            y[i] -= data.b();
        }
        try (NdArray x = array(device, DType.FLOAT64, data.x(), data.n(), data.d());
                NdArray yy = array(device, DType.FLOAT64, y, data.n());
                LinearRegression model =
                        new LinearRegression().fitIntercept(false).fit(x, yy)) {
            assertEquals(0.0, model.intercept());
            assertTrue(maxAbsDiff(data.w(), values(model.coef())) < 1e-9);
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void shouldFitARidgeThatSatisfiesItsOptimalityCondition(boolean intercept, TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 150, 4, 1.0);
        double alpha = 25;
        try (NdArray x = array(device, DType.FLOAT64, data.x(), data.n(), data.d());
                NdArray y = array(device, DType.FLOAT64, data.y(), data.n());
                Ridge model = new Ridge().alpha(alpha).fitIntercept(intercept).fit(x, y)) {
            double[] w = values(model.coef());
            double b = model.intercept();
            int n = data.n();
            int d = data.d();
            double[] grad = new double[d];
            double residualSum = 0;
            for (int i = 0; i < n; i++) {
                double res = data.y()[i] - b;
                for (int j = 0; j < d; j++) {
                    res -= data.x()[i * d + j] * w[j];
                }
                residualSum += res;
                for (int j = 0; j < d; j++) {
                    grad[j] += data.x()[i * d + j] * res;
                }
            }
            for (int j = 0; j < d; j++) {
                assertEquals(alpha * w[j], grad[j], 1e-7 * (1 + Math.abs(grad[j])), "X^T (y - Xw - b) = alpha w");
            }
            if (intercept) {
                assertEquals(0, residualSum, 1e-7, "the intercept is not penalized: residuals sum to 0");
            } else {
                assertEquals(0.0, b);
            }
            double shrunk = 0;
            double plain = 0;
            try (LinearRegression ols =
                    new LinearRegression().fitIntercept(intercept).fit(x, y)) {
                for (int j = 0; j < d; j++) {
                    shrunk += w[j] * w[j];
                    plain += values(ols.coef())[j] * values(ols.coef())[j];
                }
            }
            assertTrue(shrunk < plain, "the penalty shrinks the coefficients");
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void shouldMergePartialsIntoTheSingleDeviceFit(boolean intercept, TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 500, 6, 0.5);
        for (DType dt : new DType[] {DType.FLOAT64, DType.FLOAT32}) {
            double tol = dt == DType.FLOAT64 ? 1e-10 : 1e-3;
            try (NdArray x = array(device, dt, data.x(), data.n(), data.d());
                    NdArray y = array(device, dt, data.y(), data.n());
                    Ridge single =
                            new Ridge().alpha(0.5).fitIntercept(intercept).fit(x, y);
                    Ridge merged = new Ridge().alpha(0.5).fitIntercept(intercept)) {
                int parts = 2 + r.nextInt(4);
                long[] cuts = MlTesting.cuts(data.n(), parts, r);
                List<NdArray> xs = MlTesting.split(x, cuts);
                List<NdArray> ys = MlTesting.split(y, cuts);
                List<LinearStats> partials = new ArrayList<>();
                for (int p = 0; p < parts; p++) {
                    partials.add(merged.partial(xs.get(p), ys.get(p)));
                }
                merged.merge(partials);
                MlTesting.closeAll(partials);
                MlTesting.closeAll(xs);
                MlTesting.closeAll(ys);
                assertTrue(
                        maxAbsDiff(values(single.coef()), values(merged.coef())) < tol,
                        dt + " merged " + merged.coef() + " of " + parts + " partitions");
                assertEquals(single.intercept(), merged.intercept(), tol * 100);
            }
        }
    }

    @Test
    void shouldRoundTripThroughTheRegistryAndPredictTheSame(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 100, 3, 0.1);
        TypeRegistry registry = MlTesting.registry();
        try (NdArray x = array(device, DType.FLOAT64, data.x(), data.n(), data.d());
                NdArray y = array(device, DType.FLOAT64, data.y(), data.n());
                Ridge model = new Ridge().alpha(2).fit(x, y);
                NdArray before = model.predict(x)) {
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (TransferScope scope = CopyEngine.openScope(family.wireName());
                        Ridge back = MlTesting.roundTrip(registry, model, family, device, host)) {
                    long hostBytes = scope.bytes(CopyDirection.D2H) + scope.bytes(CopyDirection.H2D);
                    assertEquals(family == Family.CUDA ? 0 : 2 * model.coef().byteSize(), hostBytes, family + "");
                    assertEquals(MemoryKind.DEVICE, back.coef().kind());
                    assertEquals(model.params(), back.params());
                    assertEquals(model.intercept(), back.intercept());
                    try (NdArray after = back.predict(x)) {
                        assertArrayEquals(values(before), values(after), "predicts the same after the trip");
                    }
                }
            }
        }
    }

    @Test
    void shouldRefuseToPredictBeforeFittingAndReleaseStateOnClose(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Data data = Data.make(r, 20, 2, 0.1);
        try (NdArray x = array(device, DType.FLOAT64, data.x(), data.n(), data.d());
                NdArray y = array(device, DType.FLOAT64, data.y(), data.n())) {
            LinearRegression model = new LinearRegression();
            NotFittedException e = assertThrows(NotFittedException.class, () -> model.predict(x));
            assertEquals(
                    "LinearRegression is not fitted: call fit, or merge partials, before using it", e.getMessage());
            long before = device.allocatedBytes();
            model.fit(x, y);
            assertEquals(before + 2 * 8, device.allocatedBytes(), "the coefficients, on the device");
            model.fit(x, y);
            assertEquals(before + 2 * 8, device.allocatedBytes(), "refitting releases the old state");
            model.close();
            assertFalse(model.isFitted());
            assertEquals(before, device.allocatedBytes());
            model.close();
        }
    }

    @Test
    void shouldListAndSetParametersByName() {
        Ridge model = new Ridge();
        assertEquals(Map.of("fitIntercept", true, "alpha", 1.0), model.params());
        model.setParams(Map.of("alpha", 3, "fitIntercept", false));
        assertEquals(Map.of("fitIntercept", false, "alpha", 3.0), model.params());
        assertEquals(
                "Ridge has no parameter 'beta' (expected one of: fitIntercept, alpha)",
                assertThrows(IllegalArgumentException.class, () -> model.setParams(Map.of("beta", 1)))
                        .getMessage());
        assertEquals("Ridge(fitIntercept=false, alpha=3.0)", model.toString());
    }

    @Test
    void shouldRefuseInputsOfTheWrongShapeOrDtype() {
        try (NdArray x = array(device, DType.FLOAT64, new double[6], 3, 2);
                NdArray y = array(device, DType.FLOAT32, new double[3], 3);
                NdArray y2 = array(device, DType.FLOAT64, new double[2], 2)) {
            assertEquals(
                    "LinearRegression.partial: y has dtype float32 (expected: float64, the dtype of X)",
                    assertThrows(IllegalArgumentException.class, () -> new LinearRegression().fit(x, y))
                            .getMessage());
            assertEquals(
                    "LinearRegression.partial: y has shape (2,) (expected: (3,), one target per sample)",
                    assertThrows(IllegalArgumentException.class, () -> new LinearRegression().fit(x, y2))
                            .getMessage());
        }
    }
}
