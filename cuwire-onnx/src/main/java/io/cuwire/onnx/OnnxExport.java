package io.cuwire.onnx;

import static io.cuwire.onnx.internal.OnnxGraph.attr;
import static io.cuwire.onnx.internal.OnnxGraph.floats;
import static io.cuwire.onnx.internal.OnnxGraph.ints;
import static io.cuwire.onnx.internal.OnnxGraph.strings;

import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForest;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.onnx.internal.OnnxGraph;
import io.cuwire.onnx.internal.proto.OnnxMl.AttributeProto;
import io.cuwire.onnx.internal.proto.OnnxMl.TensorProto.DataType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes a fitted estimator as an ONNX model that any ONNX runtime can run: IR version {@value #IR_VERSION}, the
 * default domain at opset {@value #OPSET} and {@code ai.onnx.ml} at opset {@value #ML_OPSET} (what ONNX 1.12 defines,
 * the release whose protobuf definitions the module is compiled from; ONNX Runtime has run them since 1.12).
 *
 * <p>Every model takes one input, {@code X}: float32, (N, features). Its outputs, by estimator:
 *
 * <table>
 * <caption>the outputs of an exported model</caption>
 * <tr><th>estimator</th><th>outputs</th><th>operators</th></tr>
 * <tr><td>{@code LinearRegression}, {@code Ridge}</td><td>{@code variable}: float32 (N)</td><td>Gemm</td></tr>
 * <tr><td>{@code LogisticRegression} (two or more classes)</td><td>{@code label}: int64 (N), {@code probabilities}:
 *     float32 (N, classes)</td><td>Gemm, Softmax, ArgMax (a binary model's logit z becomes [0, z], whose softmax is
 *     the sigmoid)</td></tr>
 * <tr><td>{@code KMeans}</td><td>{@code label}: int64 (N), {@code distances}: float32 (N, clusters), Euclidean</td>
 *     <td>ReduceSumSquare, Gemm, Relu, Sqrt, ArgMin</td></tr>
 * <tr><td>{@code PCA}</td><td>{@code transformed}: float32 (N, components), whitened if fitted so</td>
 *     <td>Sub, Gemm, Div</td></tr>
 * <tr><td>{@code MultinomialNB}</td><td>{@code label}, {@code probabilities}</td><td>Gemm, Softmax, ArgMax</td></tr>
 * <tr><td>{@code KNeighborsClassifier}</td><td>{@code label}, {@code probabilities} (the share of each class among
 *     the neighbors)</td><td>the training rows as a constant; Gemm, TopK, Gather, OneHot, ReduceSum, ArgMax</td></tr>
 * <tr><td>{@code RandomForestClassifier}</td><td>{@code label}, {@code probabilities}</td>
 *     <td>{@code ai.onnx.ml} TreeEnsembleClassifier (leaf values weighted by 1 / trees), ArgMax</td></tr>
 * <tr><td>{@code RandomForestRegressor}</td><td>{@code variable}: float32 (N)</td>
 *     <td>{@code ai.onnx.ml} TreeEnsembleRegressor (AVERAGE)</td></tr>
 * </table>
 *
 * <p>Labels are class indices (0 to classes - 1), as cuwire's estimators predict them. Values are float32: a model
 * fitted in float64 is rounded to float32. A forest's thresholds are rounded down to the largest float32 at or below
 * each one, so that a float32 input goes the same way at every split as cuwire's float64 comparison sends it.
 * {@code NearestNeighbors} has no prediction to export. The model is one protobuf message, so it must stay under
 * protobuf's 2 GiB (ONNX's external data files are not written): a nearest-neighbor model holds its training rows.
 *
 * <p>Arrays are read from wherever the estimator keeps them (device arrays are copied to the host once); the
 * estimator is not changed. Thread-safe as far as the estimator is not being refitted meanwhile.
 */
public final class OnnxExport {
    /** The ONNX IR version of every model written. */
    public static final long IR_VERSION = OnnxGraph.IR_VERSION;
    /** The opset of the default ONNX domain. */
    public static final long OPSET = OnnxGraph.OPSET;
    /** The opset of the {@code ai.onnx.ml} domain. */
    public static final long ML_OPSET = OnnxGraph.ML_OPSET;
    /** The largest model written: protobuf refuses messages of 2 GiB; the rest is headroom for the encoding. */
    public static final long MAX_MODEL_BYTES = 1L << 30;

    private static final String INPUT = "X";
    private static final String VERSION = "0.1.0";

    private OnnxExport() {}

    /**
     * The ONNX model of {@code estimator}, serialized.
     *
     * @throws OnnxExportException if the estimator is of a kind that has no ONNX form, not fitted, or too large
     */
    public static byte[] toBytes(Estimator estimator) {
        String kind = estimator.getClass().getSimpleName();
        if (!estimator.isFitted()) {
            throw new OnnxExportException(kind + " is not fitted: nothing to export");
        }
        return switch (estimator) {
            case LinearModel m -> linear(m);
            case LogisticRegression m -> logistic(m);
            case KMeans m -> kmeans(m);
            case PCA m -> pca(m);
            case MultinomialNB m -> naiveBayes(m);
            case KNeighborsClassifier m -> neighbors(m);
            case RandomForest m -> forest(m);
            default ->
                throw new OnnxExportException(kind + " has no ONNX export (supported: LinearRegression, "
                        + "Ridge, LogisticRegression, KMeans, PCA, MultinomialNB, KNeighborsClassifier, "
                        + "RandomForestClassifier, RandomForestRegressor)");
        };
    }

    /**
     * Writes the ONNX model of {@code estimator} to {@code file} (replacing it).
     *
     * @throws OnnxExportException as {@link #toBytes}
     * @throws IOException if the file cannot be written
     */
    public static void write(Estimator estimator, Path file) throws IOException {
        Files.write(file, toBytes(estimator));
    }

    // ---------------------------------------------------------------- estimators

    private static byte[] linear(LinearModel m) {
        float[] w = values(m.coef());
        OnnxGraph g = new OnnxGraph(m.getClass().getSimpleName());
        String x = g.floatInput(INPUT, w.length);
        String y = g.node(
                "Gemm",
                List.of(
                        x,
                        g.floats("coef", w, 1, w.length),
                        g.floats("intercept", new float[] {(float) m.intercept()}, 1)),
                attr("transB", 1L));
        g.named(g.node("Squeeze", List.of(y, g.int64s("axis1", new long[] {1}, 1))), "variable");
        g.output("variable", DataType.FLOAT, -1);
        return finish(g, m);
    }

    private static byte[] logistic(LogisticRegression m) {
        float[] w = values(m.coef());
        float[] b = values(m.intercept());
        int rows = (int) m.coef().dim(0);
        int d = (int) m.coef().dim(1);
        if (rows == 1) {
            float[] w2 = new float[2 * d];
            System.arraycopy(w, 0, w2, d, d);
            w = w2;
            b = new float[] {0, b[0]};
        }
        int classes = w.length / d;
        OnnxGraph g = new OnnxGraph("LogisticRegression");
        String x = g.floatInput(INPUT, d);
        String z = g.node(
                "Gemm",
                List.of(x, g.floats("coef", w, classes, d), g.floats("intercept", b, classes)),
                attr("transB", 1L));
        return classifierOutputs(g, m, z, g.node("Softmax", List.of(z), attr("axis", 1L)), classes);
    }

    private static byte[] kmeans(KMeans m) {
        NdArray centers = m.clusterCenters();
        int k = (int) centers.dim(0);
        int d = (int) centers.dim(1);
        float[] c = values(centers);
        OnnxGraph g = new OnnxGraph("KMeans");
        String x = g.floatInput(INPUT, d);
        String d2 = squaredDistances(g, x, g.floats("centers", c, k, d), squaredNorms(c, k, d), k);
        g.named(g.node("ArgMin", List.of(d2), attr("axis", 1L), attr("keepdims", 0L)), "label");
        g.named(g.node("Sqrt", List.of(d2)), "distances");
        g.output("label", DataType.INT64, -1);
        g.output("distances", DataType.FLOAT, -1, k);
        return finish(g, m);
    }

    private static byte[] pca(PCA m) {
        NdArray comps = m.components();
        int k = (int) comps.dim(0);
        int d = (int) comps.dim(1);
        OnnxGraph g = new OnnxGraph("PCA");
        String x = g.floatInput(INPUT, d);
        String xc = g.node("Sub", List.of(x, g.floats("mean", values(m.mean()), d)));
        String t = g.node("Gemm", List.of(xc, g.floats("components", values(comps), k, d)), attr("transB", 1L));
        if (Boolean.TRUE.equals(m.params().get("whiten"))) {
            float[] ev = values(m.explainedVariance());
            float[] scale = new float[k];
            for (int i = 0; i < k; i++) {
                scale[i] = (float) Math.sqrt(ev[i]);
            }
            t = g.node("Div", List.of(t, g.floats("scale", scale, k)));
        }
        g.named(t, "transformed");
        g.output("transformed", DataType.FLOAT, -1, k);
        return finish(g, m);
    }

    private static byte[] naiveBayes(MultinomialNB m) {
        NdArray flp = m.featureLogProb();
        int classes = (int) flp.dim(0);
        int d = (int) flp.dim(1);
        OnnxGraph g = new OnnxGraph("MultinomialNB");
        String x = g.floatInput(INPUT, d);
        String jll = g.node(
                "Gemm",
                List.of(
                        x,
                        g.floats("feature_log_prob", values(flp), classes, d),
                        g.floats("class_log_prior", values(m.classLogPrior()), classes)),
                attr("transB", 1L));
        return classifierOutputs(g, m, jll, g.node("Softmax", List.of(jll), attr("axis", 1L)), classes);
    }

    private static byte[] neighbors(KNeighborsClassifier m) {
        NdArray fit = m.fitX();
        long n = fit.dim(0);
        int d = (int) fit.dim(1);
        checkSize(m, 4L * n * d + 8L * n);
        int k = ((Number) m.params().get("nNeighbors")).intValue();
        int classes = m.classes();
        float[] t = values(fit);
        int[] y = m.fitY().toIntArray();
        long[] labels = new long[y.length];
        for (int i = 0; i < y.length; i++) {
            labels[i] = y[i];
        }
        OnnxGraph g = new OnnxGraph("KNeighborsClassifier");
        String x = g.floatInput(INPUT, d);
        String d2 = squaredDistances(g, x, g.floats("fit_x", t, n, d), squaredNorms(t, (int) n, d), n);
        List<String> top = g.node(
                "TopK",
                "",
                List.of(d2, g.int64s("k", new long[] {k}, 1)),
                List.of("neighbor_d2", "neighbor_ids"),
                attr("largest", 0L),
                attr("sorted", 1L),
                attr("axis", 1L));
        String votedLabels = g.node("Gather", List.of(g.int64s("fit_y", labels, n), top.get(1)));
        String oneHot = g.node(
                "OneHot",
                List.of(
                        votedLabels,
                        g.int64s("depth", new long[] {classes}, 1),
                        g.floats("off_on", new float[] {0, 1}, 2)),
                attr("axis", -1L));
        String votes = g.node("ReduceSum", List.of(oneHot, g.int64s("axis1", new long[] {1}, 1)), attr("keepdims", 0L));
        String proba = g.node("Mul", List.of(votes, g.floats("inv_k", new float[] {1.0f / k}, 1)));
        return classifierOutputs(g, m, votes, proba, classes);
    }

    private static byte[] forest(RandomForest m) {
        ForestLayout.Info info = m.info();
        int outputs = info.outputs();
        checkSize(m, 40L * info.nodes() + (20L + 12L * outputs) * info.leaves());
        List<ForestLayout.Tree> trees = ForestLayout.decode(m.forest());
        int nodes = Math.toIntExact(info.nodes());
        long[] treeIds = new long[nodes];
        long[] nodeIds = new long[nodes];
        long[] featureIds = new long[nodes];
        float[] thresholds = new float[nodes];
        List<String> modes = new ArrayList<>(nodes);
        long[] trueIds = new long[nodes];
        long[] falseIds = new long[nodes];
        int leafEntries = Math.toIntExact(info.leaves() * outputs);
        long[] leafTree = new long[leafEntries];
        long[] leafNode = new long[leafEntries];
        long[] leafTarget = new long[leafEntries];
        float[] leafWeight = new float[leafEntries];
        boolean classifier = m instanceof RandomForestClassifier;
        // a classifier sums its trees' weights, so each leaf's probabilities count 1 / trees; a regressor averages
        double scale = classifier ? 1.0 / info.trees() : 1.0;
        int at = 0;
        int leafAt = 0;
        for (int t = 0; t < trees.size(); t++) {
            ForestLayout.Tree tree = trees.get(t);
            for (int i = 0; i < tree.feature().length; i++, at++) {
                treeIds[at] = t;
                nodeIds[at] = i;
                int f = tree.feature()[i];
                if (f >= 0) {
                    featureIds[at] = f;
                    thresholds[at] = floatAtOrBelow(tree.threshold()[i]);
                    modes.add("BRANCH_LEQ");
                    trueIds[at] = tree.child()[i];
                    falseIds[at] = tree.child()[i] + 1;
                } else {
                    modes.add("LEAF");
                    int leaf = tree.child()[i];
                    for (int c = 0; c < outputs; c++, leafAt++) {
                        leafTree[leafAt] = t;
                        leafNode[leafAt] = i;
                        leafTarget[leafAt] = c;
                        leafWeight[leafAt] = (float) (tree.values()[leaf * outputs + c] * scale);
                    }
                }
            }
        }
        OnnxGraph g = new OnnxGraph(m.getClass().getSimpleName());
        String x = g.floatInput(INPUT, info.features());
        var nodeAttrs = List.of(
                ints("nodes_treeids", treeIds),
                ints("nodes_nodeids", nodeIds),
                ints("nodes_featureids", featureIds),
                floats("nodes_values", thresholds),
                strings("nodes_modes", modes),
                ints("nodes_truenodeids", trueIds),
                ints("nodes_falsenodeids", falseIds),
                attr("post_transform", "NONE"));
        if (m instanceof RandomForestRegressor) {
            var attrs = new ArrayList<>(nodeAttrs);
            attrs.addAll(List.of(
                    attr("n_targets", 1L),
                    attr("aggregate_function", "AVERAGE"),
                    ints("target_treeids", leafTree),
                    ints("target_nodeids", leafNode),
                    ints("target_ids", leafTarget),
                    floats("target_weights", leafWeight)));
            String y = g.node(
                            "TreeEnsembleRegressor",
                            OnnxGraph.ML,
                            List.of(x),
                            List.of("forest_variable"),
                            attrs.toArray(AttributeProto[]::new))
                    .getFirst();
            g.named(g.node("Squeeze", List.of(y, g.int64s("axis1", new long[] {1}, 1))), "variable");
            g.output("variable", DataType.FLOAT, -1);
            return finish(g, m);
        }
        long[] classLabels = new long[outputs];
        for (int c = 0; c < outputs; c++) {
            classLabels[c] = c;
        }
        var attrs = new ArrayList<>(nodeAttrs);
        attrs.addAll(List.of(
                ints("classlabels_int64s", classLabels),
                ints("class_treeids", leafTree),
                ints("class_nodeids", leafNode),
                ints("class_ids", leafTarget),
                floats("class_weights", leafWeight)));
        List<String> out = g.node(
                "TreeEnsembleClassifier",
                OnnxGraph.ML,
                List.of(x),
                List.of("forest_label", "forest_probabilities"),
                attrs.toArray(AttributeProto[]::new));
        return classifierOutputs(g, m, out.get(1), out.get(1), outputs);
    }

    // ---------------------------------------------------------------- pieces

    /** {@code label} (the first largest score's index) and {@code probabilities}, and the model. */
    private static byte[] classifierOutputs(OnnxGraph g, Estimator m, String scores, String proba, int classes) {
        g.named(g.node("ArgMax", List.of(scores), attr("axis", 1L), attr("keepdims", 0L)), "label");
        g.named(proba, "probabilities");
        g.output("label", DataType.INT64, -1);
        g.output("probabilities", DataType.FLOAT, -1, classes);
        return finish(g, m);
    }

    /** max(0, |x|^2 - 2 x.r + |r|^2) of every row x of {@code x} and r of {@code refs}: (N, count). */
    private static String squaredDistances(OnnxGraph g, String x, String refs, float[] refNorms, long count) {
        String xx = g.node("ReduceSumSquare", List.of(x), ints("axes", new long[] {1}), attr("keepdims", 1L));
        String xr = g.node(
                "Gemm",
                List.of(x, refs, g.floats(refs + "_norms", refNorms, count)),
                attr("transB", 1L),
                attr("alpha", -2.0f));
        return g.node("Relu", List.of(g.node("Add", List.of(xr, xx))));
    }

    private static float[] squaredNorms(float[] rows, int n, int d) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            double s = 0;
            for (int j = 0; j < d; j++) {
                double v = rows[i * d + j];
                s += v * v;
            }
            out[i] = (float) s;
        }
        return out;
    }

    /** The largest float32 at or below {@code t}: for a float32 x, {@code x <= t} exactly when {@code x <= f}. */
    static float floatAtOrBelow(double t) {
        float f = (float) t;
        return f > t ? Math.nextDown(f) : f;
    }

    private static void checkSize(Estimator m, long bytes) {
        if (bytes > MAX_MODEL_BYTES) {
            throw new OnnxExportException(m.getClass().getSimpleName() + " would take about " + bytes
                    + " bytes as an ONNX model (limit: " + MAX_MODEL_BYTES + "; ONNX external data is not written)");
        }
    }

    /** The elements of a float32 or float64 array (anywhere) as float32. */
    private static float[] values(NdArray a) {
        if (a.size() > Integer.MAX_VALUE - 8) {
            throw new OnnxExportException("an array of " + a.size() + " elements is too large to export");
        }
        if (a.dtype() == DType.FLOAT32) {
            return a.toFloatArray();
        }
        if (a.dtype() != DType.FLOAT64) {
            throw new OnnxExportException("an array of " + a.dtype().wireName() + " (expected: float32 or float64)");
        }
        double[] v = a.toDoubleArray();
        float[] out = new float[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = (float) v[i];
        }
        return out;
    }

    private static byte[] finish(OnnxGraph g, Estimator m) {
        return g.toBytes(VERSION, "cuwire " + m.getClass().getSimpleName() + " " + m.params());
    }
}
