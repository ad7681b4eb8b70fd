package io.cuwire.serialize;

import io.cuwire.memory.NdArray;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** Estimator-shaped classes the serializer tests walk. */
final class Models {
    private Models() {}

    enum Solver {
        LBFGS,
        NEWTON
    }

    abstract static class Estimator {
        int seed = 7;
        String name;
    }

    static final class KMeans extends Estimator {
        int nClusters;
        double tol;
        float learningRate;
        boolean fitted;
        Solver solver;
        long[] counts;
        double[] centers;
        byte[] blob;
        Integer boxed;
        Character c;
        List<Object> history = new ArrayList<>();
        Map<String, Object> extras = new LinkedHashMap<>();
        Set<Object> tags;
        Optional<String> label = Optional.empty();
        State state;
        Point[] points;
        Object anything;
        transient Object nativeHandle = new Object();

        @SkipSerialization
        Object cache = "cache";

        int rebuilt;
    }

    static final class State {
        double[] weights;
        Object lock;
        State inner;
    }

    record Point(double x, double y, String tag) {}

    static final class Hooked extends Estimator implements PostDeserialize {
        transient int derived;
        int base;

        @Override
        public void postDeserialize() {
            derived = base * 2;
        }
    }

    static final class PrivateConstructor extends Estimator {
        long fitted;

        private PrivateConstructor() {}

        static PrivateConstructor of(long fitted) {
            PrivateConstructor p = new PrivateConstructor();
            p.fitted = fitted;
            return p;
        }
    }

    /** A type only the {@code host} family can take (a custom serializer registered there alone). */
    static final class HostOnly {
        final String text;

        HostOnly(String text) {
            this.text = text;
        }

        static final Serializer<HostOnly> SERIALIZER = new Serializer<>() {
            @Override
            public void write(WriteContext out, HostOnly value) {
                out.put("text", value.text);
            }

            @Override
            public HostOnly read(ReadContext in) {
                return new HostOnly(in.getString("text"));
            }
        };
    }

    static final class NoDefaultConstructor extends Estimator {
        final int x;

        NoDefaultConstructor(int x) {
            this.x = x;
        }
    }

    /** A Serializable type for the java family. */
    static final class Legacy implements Serializable {
        private static final long serialVersionUID = 1L;
        String text;
        int[] values;
    }

    /** A Serializable estimator whose fitted state lives in device arrays, for the java family. */
    static final class SerializableEstimator implements Serializable {
        private static final long serialVersionUID = 1L;
        String solver;
        int nClusters;
        ArrayList<String> features = new ArrayList<>();
        NdArray coef;
        NdArray centers;
    }

    /** An allow-listed Serializable type whose field may hold anything. */
    static final class Holder implements Serializable {
        private static final long serialVersionUID = 1L;
        Object inner;
    }

    /** An allow-listed type whose serial form reads back as a {@link Holder} without its array. */
    static final class Dropping implements Serializable {
        private static final long serialVersionUID = 1L;
        NdArray array;

        private Object readResolve() {
            Holder h = new Holder();
            h.inner = "dropped";
            return h;
        }
    }

    /** A Serializable type that is never allowed. */
    static final class NotAllowed implements Serializable {
        private static final long serialVersionUID = 1L;
        String text = "x";
    }

    /** Loaded only if a decoder resolves its name; it must never be. */
    static final class Canary {
        static final boolean LOADED = Flag.set();
    }

    /** Loaded by name in the class-loading test, to show that its recording sees a load when one happens. */
    static final class LoadControl {}

    static final class Flag {
        static volatile boolean canaryInitialized;

        static boolean set() {
            canaryInitialized = true;
            return true;
        }
    }

    static TypeRegistry registry() {
        return new TypeRegistry()
                .registerGeneric(Estimator.class, Family.CUDA, Family.HOST)
                .registerGeneric(State.class, Family.CUDA, Family.HOST)
                .registerGeneric(Record.class, Family.CUDA, Family.HOST)
                .register(KMeans.class, "test.KMeans")
                .register(Hooked.class, "test.Hooked")
                .register(NoDefaultConstructor.class, "test.NoDefault")
                .register(PrivateConstructor.class, "test.PrivateConstructor")
                .register(State.class, "test.State")
                .register(Point.class, "test.Point")
                .register(Solver.class, "test.Solver");
    }
}
