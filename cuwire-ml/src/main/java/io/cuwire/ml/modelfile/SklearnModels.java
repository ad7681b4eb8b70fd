package io.cuwire.ml.modelfile;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForest;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.serialize.OpaqueBlob;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * scikit-learn's estimators onto cuwire's and back: which arrays each kind has, the checks on them, and the
 * conversion of scikit-learn's trees into {@link ForestLayout}. The arrays table is in {@code docs/model-file.md}.
 */
final class SklearnModels {
    static final List<String> ESTIMATORS = List.of(
            "LinearRegression",
            "Ridge",
            "LogisticRegression",
            "KMeans",
            "PCA",
            "MultinomialNB",
            "KNeighborsClassifier",
            "RandomForestClassifier",
            "RandomForestRegressor");

    private SklearnModels() {}

    // ---------------------------------------------------------------- file -> cuwire

    static Estimator build(ModelFile f, BufferAllocator<?> mem, DType dtype) {
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException("dtype " + dtype.wireName() + " (expected: float32 or float64)");
        }
        Reader r = new Reader(f, mem, dtype);
        return switch (f.estimator()) {
            case "LinearRegression", "Ridge" -> r.linear();
            case "LogisticRegression" -> r.logistic();
            case "KMeans" -> r.kmeans();
            case "PCA" -> r.pca();
            case "MultinomialNB" -> r.naiveBayes();
            case "KNeighborsClassifier" -> r.neighbors();
            case "RandomForestClassifier", "RandomForestRegressor" -> r.forest();
            default ->
                throw new ModelFileException(
                        "estimator",
                        "'" + f.estimator() + "' (expected one of: " + String.join(", ", ESTIMATORS) + ")");
        };
    }

    /** The checks and uploads of one file's import. */
    private static final class Reader {
        private final ModelFile f;
        private final BufferAllocator<?> mem;
        private final DType dtype;
        private final int features;

        Reader(ModelFile f, BufferAllocator<?> mem, DType dtype) {
            this.f = f;
            this.mem = mem;
            this.dtype = dtype;
            long d = longAttribute("n_features_in_");
            if (d < 1 || d > Integer.MAX_VALUE) {
                throw new ModelFileException("attributes.n_features_in_", d + " (expected: >= 1)");
            }
            this.features = (int) d;
        }

        Estimator linear() {
            only("coef_", "intercept_");
            double[] coef = array("coef_", features);
            double intercept = array("intercept_")[0];
            LinearModel m = f.estimator().equals("Ridge")
                    ? new Ridge().alpha(nonNegative(param("alpha", 1.0)))
                    : new LinearRegression();
            m.setParams(Map.of("fitIntercept", bool("fit_intercept", true)));
            return m.adoptFitted(upload(coef, features), intercept);
        }

        Estimator logistic() {
            only("coef_", "intercept_", "classes_");
            int k = classes(array("classes_", -1).length);
            int rows = k == 2 ? 1 : k;
            Object multi = f.params().get("multi_class");
            if (k > 2 && "ovr".equals(multi)) {
                throw new ModelFileException(
                        "params.multi_class",
                        "'ovr' for " + k + " classes (expected: auto or "
                                + "multinomial; cuwire's logistic regression is multinomial)");
            }
            Object penalty = f.params().getOrDefault("penalty", "l2");
            if ("deprecated".equals(penalty)) {
                // scikit-learn 1.8 deprecated penalty: l1_ratio says the mix (0 or null: L2, the default)
                Object l1Ratio = f.params().get("l1_ratio");
                if (l1Ratio != null && !(l1Ratio instanceof Number n && n.doubleValue() == 0)) {
                    throw new ModelFileException(
                            "params.l1_ratio",
                            l1Ratio + " with penalty 'deprecated' (expected: 0 or null; cuwire's "
                                    + "logistic regression has an L2 penalty or none)");
                }
                penalty = "l2";
            }
            if (!"l2".equals(penalty) && !"none".equals(penalty) && penalty != null) {
                throw new ModelFileException("params.penalty", penalty + " (expected: l2, none, null or deprecated)");
            }
            double[] coef = array("coef_", rows, features);
            double[] intercept = array("intercept_", rows);
            LogisticRegression m = new LogisticRegression()
                    .c(positive("C", param("C", 1.0)))
                    .penalty("l2".equals(penalty) ? LogisticRegression.Penalty.L2 : LogisticRegression.Penalty.NONE)
                    .fitIntercept(bool("fit_intercept", true))
                    .maxIter((int) param("max_iter", 100))
                    .tol(param("tol", 1e-4));
            NdArray c = upload(coef, rows, features);
            NdArray b;
            try {
                b = upload(intercept, rows);
            } catch (RuntimeException | Error e) {
                c.close();
                throw e;
            }
            return m.adoptFitted(c, b, k);
        }

        Estimator kmeans() {
            only("cluster_centers_");
            int k = rows("cluster_centers_");
            double[] centers = array("cluster_centers_", k, features);
            if (f.params().get("n_clusters") instanceof Long n && n != k) {
                throw new ModelFileException(
                        "params.n_clusters", n + " (expected: " + k + ", the rows of cluster_centers_)");
            }
            KMeans m = new KMeans().maxIter((int) param("max_iter", 300)).tol(param("tol", 1e-4));
            if (f.params().get("random_state") instanceof Long seed) {
                m.seed(seed);
            }
            return m.adoptFitted(
                    upload(centers, k, features), doubleAttribute("inertia_", 0), (int) longAttribute("n_iter_", 0));
        }

        Estimator pca() {
            only("components_", "mean_", "explained_variance_", "explained_variance_ratio_", "singular_values_");
            int k = rows("components_");
            double[] components = array("components_", k, features);
            double[] mean = array("mean_", features);
            double[] variance = array("explained_variance_", k);
            for (int i = 0; i < k; i++) {
                if (variance[i] < 0) {
                    throw new ModelFileException(
                            "explained_variance_[" + i + "]", variance[i] + " (expected: a variance, >= 0)");
                }
            }
            double[] ratio = array("explained_variance_ratio_", k);
            double[] singular = array("singular_values_", k);
            PCA m = new PCA().whiten(bool("whiten", false));
            List<NdArray> up = new ArrayList<>();
            try {
                up.add(upload(mean, features));
                up.add(upload(components, k, features));
                up.add(upload(variance, k));
                up.add(upload(ratio, k));
                up.add(upload(singular, k));
            } catch (RuntimeException | Error e) {
                up.forEach(NdArray::close);
                throw e;
            }
            return m.adoptFitted(
                    up.get(0),
                    up.get(1),
                    up.get(2),
                    up.get(3),
                    up.get(4),
                    doubleAttribute("noise_variance_", 0),
                    longAttribute("n_samples_", 0));
        }

        Estimator naiveBayes() {
            only("class_count_", "feature_count_", "feature_log_prob_", "class_log_prior_", "classes_");
            int k = classes(array("classes_", -1).length);
            double[] classCount = array("class_count_", k);
            double[] featureCount = array("feature_count_", k, features);
            double[] logProb = array("feature_log_prob_", k, features);
            double[] logPrior = array("class_log_prior_", k);
            nonNegative("class_count_", classCount);
            nonNegative("feature_count_", featureCount);
            double alpha = nonNegative(param("alpha", 1.0));
            if (alpha < 1e-10 && !Boolean.TRUE.equals(f.params().get("force_alpha"))) {
                alpha = 1e-10; // scikit-learn's own floor unless force_alpha
            }
            MultinomialNB m = new MultinomialNB().alpha(alpha).fitPrior(bool("fit_prior", true));
            NdArray cc = upload(classCount, k);
            try (NdArray fc = upload(featureCount, k, features)) {
                m.merge(List.of(new MultinomialNB.Counts(cc, fc)));
            } finally {
                cc.close();
            }
            try {
                double tol = dtype == DType.FLOAT32 ? 1e-5 : 1e-9;
                consistent("feature_log_prob_", logProb, HostArrays.doubles(m.featureLogProb()), tol);
                consistent("class_log_prior_", logPrior, HostArrays.doubles(m.classLogPrior()), tol);
                return m;
            } catch (RuntimeException | Error e) {
                m.close();
                throw e;
            }
        }

        Estimator neighbors() {
            only("_fit_X", "_y", "classes_");
            int k = classes(array("classes_", -1).length);
            int n = rows("_fit_X");
            double[] x = array("_fit_X", n, features);
            double[] y = array("_y", n);
            int[] labels = new int[n];
            for (int i = 0; i < n; i++) {
                if (!(y[i] >= 0 && y[i] < k && y[i] == Math.rint(y[i]))) {
                    throw new ModelFileException(
                            "_y[" + i + "]", y[i] + " (expected: a class index 0 .. " + (k - 1) + ")");
                }
                labels[i] = (int) y[i];
            }
            Object weights = f.params().getOrDefault("weights", "uniform");
            if (!"uniform".equals(weights)) {
                throw new ModelFileException("params.weights", weights + " (expected: uniform; cuwire's vote is)");
            }
            Object metric = f.params().getOrDefault("metric", "minkowski");
            Object p = f.params().getOrDefault("p", 2L);
            if (!"euclidean".equals(metric)
                    && !("minkowski".equals(metric) && p instanceof Number q && q.doubleValue() == 2)) {
                throw new ModelFileException(
                        "params.metric",
                        metric + " with p=" + p + " (expected: euclidean, or "
                                + "minkowski with p=2; cuwire measures euclidean distances)");
            }
            long neighbours = longParam("n_neighbors", 5);
            if (neighbours < 1 || neighbours > n) {
                throw new ModelFileException(
                        "params.n_neighbors", neighbours + " (expected: 1 .. " + n + ", the rows of _fit_X)");
            }
            KNeighborsClassifier m =
                    new KNeighborsClassifier().nNeighbors((int) neighbours).nClasses(k);
            try (NdArray xs = upload(x, n, features);
                    NdArray ys = NdArray.empty(mem, DType.INT32, Order.C, n)) {
                HostArrays.write(ys, labels);
                return m.merge(List.of(new KNeighborsClassifier.Rows(xs, ys)));
            }
        }

        Estimator forest() {
            boolean classifier = f.estimator().equals("RandomForestClassifier");
            if (classifier) {
                only("tree_node_count", "children_left", "children_right", "feature", "threshold", "value", "classes_");
            } else {
                only("tree_node_count", "children_left", "children_right", "feature", "threshold", "value");
            }
            int classes = classifier ? classes(array("classes_", -1).length) : 0;
            int outputs = classifier ? classes : 1;
            double[] counts = array("tree_node_count", -1);
            if (counts.length < 1) {
                throw new ModelFileException("tree_node_count", "no trees (expected: at least one)");
            }
            long total = 0;
            for (int t = 0; t < counts.length; t++) {
                if (!(counts[t] >= 1)) {
                    throw new ModelFileException("tree_node_count[" + t + "]", counts[t] + " (expected: >= 1)");
                }
                total += (long) counts[t];
            }
            int nodes = rows("children_left");
            if (total != nodes) {
                throw new ModelFileException(
                        "tree_node_count",
                        "sums to " + total + " (expected: " + nodes + ", the length of children_left)");
            }
            double[] left = array("children_left", nodes);
            double[] right = array("children_right", nodes);
            double[] feature = array("feature", nodes);
            double[] threshold = arrayAllowingNaN("threshold", nodes);
            double[] value = array("value", nodes, outputs);
            List<ForestLayout.Tree> trees = new ArrayList<>();
            int first = 0;
            for (int t = 0; t < counts.length; t++) {
                int n = (int) counts[t];
                trees.add(SklearnTrees.convert(
                        t, first, n, left, right, feature, threshold, value, outputs, features, classifier));
                first += n;
            }
            byte[] bytes = ForestLayout.encode(trees, features, classes);
            ForestLayout.Info info = ForestLayout.infoOf(trees, features, classes);
            Buffer buffer = mem.allocate(bytes.length);
            OpaqueBlob blob;
            try {
                CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes), buffer, 0);
                blob = OpaqueBlob.adopt(ForestLayout.FORMAT, ForestLayout.metadata(info), buffer);
            } catch (RuntimeException | Error e) {
                buffer.close();
                throw e;
            }
            try (blob) {
                Map<String, Object> params = new LinkedHashMap<>();
                params.put("nEstimators", counts.length);
                if (f.params().get("max_depth") instanceof Long depth) {
                    params.put("maxDepth", Math.toIntExact(depth));
                }
                params.put("minSamplesSplit", (int) longParam("min_samples_split", 2));
                params.put("minSamplesLeaf", (int) longParam("min_samples_leaf", 1));
                params.put("bootstrap", bool("bootstrap", true));
                if (classifier) {
                    RandomForestClassifier m = new RandomForestClassifier().nClasses(classes);
                    m.setParams(params);
                    return m.merge(List.of(blob));
                }
                RandomForestRegressor m = new RandomForestRegressor();
                m.setParams(params);
                return m.merge(List.of(blob));
            }
        }

        // ------------------------------------------------------------ checks

        private void only(String... names) {
            Set<String> expected = Set.of(names);
            for (String name : f.arrays().keySet()) {
                if (!expected.contains(name)) {
                    throw new ModelFileException(
                            "arrays." + name,
                            "an unknown array for " + f.estimator() + " (expected: " + String.join(", ", names) + ")");
                }
            }
            for (String name : names) {
                if (!f.arrays().containsKey(name)) {
                    throw new ModelFileException(
                            "arrays." + name, "missing (" + f.estimator() + " has " + String.join(", ", names) + ")");
                }
            }
        }

        private int rows(String name) {
            long[] s = f.arrays().get(name).shape();
            if (s.length == 0 || s[0] < 1) {
                throw new ModelFileException(
                        "arrays." + name + ".shape", ModelFile.shapeText(s) + " (expected: at " + "least one row)");
            }
            return (int) s[0];
        }

        private int classes(int k) {
            if (k < 2) {
                throw new ModelFileException("arrays.classes_.shape", "(" + k + ",) (expected: 2 or more classes)");
            }
            return k;
        }

        /** The values of {@code name}, of the shape {@code dims} (-1: any length of a vector), all finite. */
        private double[] array(String name, long... dims) {
            double[] v = arrayAllowingNaN(name, dims);
            for (int i = 0; i < v.length; i++) {
                if (!Double.isFinite(v[i])) {
                    throw new ModelFileException(name + "[" + i + "]", v[i] + " (expected: a finite value)");
                }
            }
            return v;
        }

        private double[] arrayAllowingNaN(String name, long... dims) {
            ModelFile.Array a = f.arrays().get(name);
            long[] s = a.shape();
            boolean ok = s.length == dims.length;
            for (int i = 0; ok && i < dims.length; i++) {
                ok = dims[i] < 0 || s[i] == dims[i];
            }
            if (!ok) {
                StringBuilder want = new StringBuilder("(");
                for (int i = 0; i < dims.length; i++) {
                    want.append(i > 0 ? ", " : "").append(dims[i] < 0 ? "n" : Long.toString(dims[i]));
                }
                want.append(dims.length == 1 ? ",)" : ")");
                throw new ModelFileException("arrays." + name + ".shape", a.shapeText() + " (expected: " + want + ")");
            }
            return a.values();
        }

        private void nonNegative(String name, double[] v) {
            for (int i = 0; i < v.length; i++) {
                if (v[i] < 0) {
                    throw new ModelFileException(name + "[" + i + "]", v[i] + " (expected: a count, >= 0)");
                }
            }
        }

        private void consistent(String name, double[] file, double[] computed, double tol) {
            for (int i = 0; i < file.length; i++) {
                if (Math.abs(file[i] - computed[i]) > tol * Math.max(1, Math.abs(computed[i]))) {
                    throw new ModelFileException(
                            name + "[" + i + "]",
                            file[i] + ", but the counts and alpha give " + computed[i]
                                    + " (expected: arrays that agree)");
                }
            }
        }

        private NdArray upload(double[] v, long... shape) {
            return HostArrays.upload(mem, dtype, v, shape);
        }

        private double param(String name, double otherwise) {
            Object v = f.params().get(name);
            if (v == null) {
                return otherwise;
            }
            if (!(v instanceof Number n)) {
                throw new ModelFileException("params." + name, v + " (expected: a number)");
            }
            return n.doubleValue();
        }

        private long longParam(String name, long otherwise) {
            Object v = f.params().get(name);
            if (v == null) {
                return otherwise;
            }
            if (!(v instanceof Long n)) {
                throw new ModelFileException("params." + name, v + " (expected: an integer)");
            }
            return n;
        }

        private boolean bool(String name, boolean otherwise) {
            Object v = f.params().get(name);
            if (v == null) {
                return otherwise;
            }
            if (!(v instanceof Boolean b)) {
                throw new ModelFileException("params." + name, v + " (expected: true or false)");
            }
            return b;
        }

        private double positive(String name, double v) {
            if (!(v > 0)) {
                throw new ModelFileException("params." + name, v + " (expected: > 0)");
            }
            return v;
        }

        private double nonNegative(double alpha) {
            if (!(alpha >= 0)) {
                throw new ModelFileException("params.alpha", alpha + " (expected: >= 0)");
            }
            return alpha;
        }

        private long longAttribute(String name) {
            if (!(f.attributes().get(name) instanceof Long v)) {
                throw new ModelFileException(
                        "attributes." + name, f.attributes().get(name) + " (expected: an integer)");
            }
            return v;
        }

        private long longAttribute(String name, long otherwise) {
            return f.attributes().containsKey(name) ? longAttribute(name) : otherwise;
        }

        private double doubleAttribute(String name, double otherwise) {
            Object v = f.attributes().get(name);
            if (v == null) {
                return otherwise;
            }
            if (!(v instanceof Number n)) {
                throw new ModelFileException("attributes." + name, v + " (expected: a number)");
            }
            return n.doubleValue();
        }
    }

    // ---------------------------------------------------------------- cuwire -> file

    static ModelFile describe(Estimator e) {
        if (!e.isFitted()) {
            throw new ModelFileException(
                    "estimator", e.getClass().getSimpleName() + " is not fitted (expected: a " + "fitted estimator)");
        }
        Map<String, Object> params = new LinkedHashMap<>();
        Map<String, Object> attributes = new LinkedHashMap<>();
        List<ModelFile.Array> arrays = new ArrayList<>();
        String name = e.getClass().getSimpleName();
        switch (e) {
            case LinearModel m -> {
                params.put("fit_intercept", m.fitIntercept());
                if (m instanceof Ridge) {
                    params.put("alpha", ((Number) m.params().get("alpha")).doubleValue());
                }
                attributes.put("n_features_in_", m.coef().dim(0));
                arrays.add(array("coef_", m.coef()));
                arrays.add(new ModelFile.Array("intercept_", DType.FLOAT64, new long[0], new double[] {m.intercept()}));
            }
            case LogisticRegression m -> {
                Map<String, Object> p = m.params();
                params.put("C", p.get("c"));
                params.put("penalty", p.get("penalty") == LogisticRegression.Penalty.L2 ? "l2" : null);
                params.put("fit_intercept", p.get("fitIntercept"));
                params.put("max_iter", ((Number) p.get("maxIter")).longValue());
                params.put("tol", p.get("tol"));
                attributes.put("n_features_in_", m.coef().dim(1));
                attributes.put("n_iter_", (long) m.nIter());
                arrays.add(array("coef_", m.coef()));
                arrays.add(array("intercept_", m.intercept()));
                arrays.add(range(m.classes()));
            }
            case KMeans m -> {
                Map<String, Object> p = m.params();
                params.put("n_clusters", m.clusterCenters().dim(0));
                params.put("max_iter", ((Number) p.get("maxIter")).longValue());
                params.put("tol", p.get("tol"));
                params.put("random_state", p.get("seed"));
                attributes.put("n_features_in_", m.clusterCenters().dim(1));
                attributes.put("inertia_", m.inertia());
                attributes.put("n_iter_", (long) m.nIter());
                arrays.add(array("cluster_centers_", m.clusterCenters()));
            }
            case PCA m -> {
                params.put("n_components", m.components().dim(0));
                params.put("whiten", m.params().get("whiten"));
                attributes.put("n_features_in_", m.mean().dim(0));
                attributes.put("noise_variance_", m.noiseVariance());
                attributes.put("n_samples_", m.nSamples());
                arrays.add(array("components_", m.components()));
                arrays.add(array("mean_", m.mean()));
                arrays.add(array("explained_variance_", m.explainedVariance()));
                arrays.add(array("explained_variance_ratio_", m.explainedVarianceRatio()));
                arrays.add(array("singular_values_", m.singularValues()));
            }
            case MultinomialNB m -> {
                params.put("alpha", m.params().get("alpha"));
                params.put("fit_prior", m.params().get("fitPrior"));
                attributes.put("n_features_in_", m.featureCount().dim(1));
                arrays.add(array("class_count_", m.classCount()));
                arrays.add(array("feature_count_", m.featureCount()));
                arrays.add(array("feature_log_prob_", m.featureLogProb()));
                arrays.add(array("class_log_prior_", m.classLogPrior()));
                arrays.add(range(m.classes()));
            }
            case KNeighborsClassifier m -> {
                params.put("n_neighbors", ((Number) m.params().get("nNeighbors")).longValue());
                params.put("weights", "uniform");
                params.put("metric", "minkowski");
                params.put("p", 2L);
                attributes.put("n_features_in_", m.fitX().dim(1));
                arrays.add(array("_fit_X", m.fitX()));
                double[] y = HostArrays.numbers(m.fitY());
                arrays.add(new ModelFile.Array("_y", DType.INT64, new long[] {y.length}, y));
                arrays.add(range(m.classes()));
            }
            case RandomForest m -> {
                Map<String, Object> p = m.params();
                params.put("n_estimators", (long) m.info().trees());
                params.put("max_depth", ((Number) p.get("maxDepth")).longValue());
                params.put("min_samples_split", ((Number) p.get("minSamplesSplit")).longValue());
                params.put("min_samples_leaf", ((Number) p.get("minSamplesLeaf")).longValue());
                params.put("bootstrap", p.get("bootstrap"));
                params.put("random_state", p.get("seed"));
                attributes.put("n_features_in_", (long) m.info().features());
                arrays.addAll(SklearnTrees.arrays(ForestLayout.decode(m.forest()), m.info()));
                if (m instanceof RandomForestClassifier c) {
                    arrays.add(range(c.classes()));
                }
            }
            default ->
                throw new ModelFileException(
                        "estimator", name + " (expected one of: " + String.join(", ", ESTIMATORS) + ")");
        }
        return new ModelFile(name, "cuwire", params, attributes, arrays);
    }

    private static ModelFile.Array array(String name, NdArray a) {
        return new ModelFile.Array(name, DType.FLOAT64, a.shape(), HostArrays.doubles(a));
    }

    private static ModelFile.Array range(int classes) {
        double[] v = new double[classes];
        for (int i = 0; i < classes; i++) {
            v[i] = i;
        }
        return new ModelFile.Array("classes_", DType.INT64, new long[] {classes}, v);
    }
}
