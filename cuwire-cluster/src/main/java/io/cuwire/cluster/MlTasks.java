package io.cuwire.cluster;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.Regressor;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.decomposition.PcaStats;
import io.cuwire.ml.ensemble.RandomForest;
import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LinearStats;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import io.cuwire.serialize.OpaqueBlob;
import java.util.List;

/**
 * The built-in tasks every worker has: the partial half of each estimator's partial/merge contract, prediction and
 * transformation with a broadcast model, and small questions about a partition. Arguments are in the order the
 * constants name them; estimators travel as arguments (their parameters, and for prediction their fitted state).
 */
public final class MlTasks {
    /** {@code (LinearModel, X, y)}: the least-squares statistics of a partition. */
    public static final TaskType<LinearStats> LINEAR_PARTIAL = TaskType.of("ml.linear.partial", LinearStats.class);
    /** {@code (KMeans, X, Long seed)}: a partition's candidate centers. */
    public static final TaskType<KMeans.Candidates> KMEANS_INIT =
            TaskType.of("ml.kmeans.init", KMeans.Candidates.class);
    /** {@code (KMeans, X, centers)}: a partition's Lloyd step against the centers. */
    public static final TaskType<KMeans.Step> KMEANS_STEP = TaskType.of("ml.kmeans.step", KMeans.Step.class);
    /** {@code (LogisticRegression, X, y, coef, intercept)}: a partition's loss and gradient there. */
    public static final TaskType<LogisticRegression.Gradient> LOGREG_GRADIENT =
            TaskType.of("ml.logreg.gradient", LogisticRegression.Gradient.class);
    /** {@code (PCA, X)}: a partition's mean and scatter. */
    public static final TaskType<PcaStats> PCA_PARTIAL = TaskType.of("ml.pca.partial", PcaStats.class);
    /** {@code (MultinomialNB, X, y)}: a partition's class and feature counts. */
    public static final TaskType<MultinomialNB.Counts> NB_PARTIAL =
            TaskType.of("ml.nb.partial", MultinomialNB.Counts.class);
    /** {@code (RandomForest, X, y, Long index, Long count)}: the trees of partition {@code index} as a blob. */
    public static final TaskType<OpaqueBlob> FOREST_PARTIAL = TaskType.of("ml.forest.partial", OpaqueBlob.class);
    /** {@code (KNeighborsClassifier, X, y)}: copies of a partition's rows and labels. */
    public static final TaskType<KNeighborsClassifier.Rows> KNN_PARTIAL =
            TaskType.of("ml.knn.partial", KNeighborsClassifier.Rows.class);
    /** {@code (NearestNeighbors, X)}: the estimator fitted on the partition (keep it there with submit). */
    public static final TaskType<NearestNeighbors> NEIGHBORS_FIT =
            TaskType.of("ml.neighbors.fit", NearestNeighbors.class);
    /** {@code (NearestNeighbors fitted, queries, Long k, Long idOffset)}: the partition's nearest rows. */
    public static final TaskType<Neighbors> NEIGHBORS_PARTIAL = TaskType.of("ml.neighbors.partial", Neighbors.class);
    /** {@code (model, X)}: predictions of a regressor, classifier or k-means model. */
    public static final TaskType<NdArray> PREDICT = TaskType.of("ml.predict", NdArray.class);
    /** {@code (model, X)}: the transform of a PCA or k-means model. */
    public static final TaskType<NdArray> TRANSFORM = TaskType.of("ml.transform", NdArray.class);
    /** {@code (array)}: the largest element. */
    public static final TaskType<Double> MAX = TaskType.of("ml.max", Double.class);
    /** {@code (array)}: its shape. */
    public static final TaskType<long[]> SHAPE = TaskType.of("ml.shape", long[].class);
    /** {@code (array)}: the wire name of its dtype. */
    public static final TaskType<String> DTYPE = TaskType.of("ml.dtype", String.class);

    private MlTasks() {}

    static void registerAll(TaskRegistry r) {
        r.register(LINEAR_PARTIAL, (c, a) -> ((LinearModel) a.get(0)).partial(array(a, 1), array(a, 2)));
        r.register(KMEANS_INIT, (c, a) -> ((KMeans) a.get(0)).partialInit(array(a, 1), (Long) a.get(2)));
        r.register(KMEANS_STEP, (c, a) -> ((KMeans) a.get(0)).partialStep(array(a, 1), array(a, 2)));
        r.register(
                LOGREG_GRADIENT,
                (c, a) -> ((LogisticRegression) a.get(0))
                        .partialGradient(array(a, 1), array(a, 2), array(a, 3), array(a, 4)));
        r.register(PCA_PARTIAL, (c, a) -> ((PCA) a.get(0)).partial(array(a, 1)));
        r.register(NB_PARTIAL, (c, a) -> ((MultinomialNB) a.get(0)).partial(array(a, 1), array(a, 2)));
        r.register(
                FOREST_PARTIAL,
                (c, a) -> ((RandomForest) a.get(0))
                        .partial(array(a, 1), array(a, 2), ((Long) a.get(3)).intValue(), ((Long) a.get(4)).intValue()));
        r.register(KNN_PARTIAL, (c, a) -> ((KNeighborsClassifier) a.get(0)).partial(array(a, 1), array(a, 2)));
        r.register(NEIGHBORS_FIT, (c, a) -> {
            NearestNeighbors template = (NearestNeighbors) a.get(0);
            NearestNeighbors nn = new NearestNeighbors();
            nn.setParams(template.params());
            return nn.fit(array(a, 1));
        });
        r.register(
                NEIGHBORS_PARTIAL,
                (c, a) -> ((NearestNeighbors) a.get(0))
                        .partialKneighbors(array(a, 1), ((Long) a.get(2)).intValue(), (Long) a.get(3)));
        r.register(PREDICT, (c, a) -> predict(a.get(0), array(a, 1)));
        r.register(TRANSFORM, (c, a) -> switch (a.get(0)) {
            case PCA p -> p.transform(array(a, 1));
            case KMeans k -> k.transform(array(a, 1));
            case Object o ->
                throw new IllegalArgumentException(
                        "ml.transform: " + o.getClass().getSimpleName() + " has no transform");
        });
        r.register(MAX, (c, a) -> ComputeBackends.forArray(array(a, 0)).reduce(Reduction.MAX, array(a, 0)));
        r.register(SHAPE, (c, a) -> array(a, 0).shape());
        r.register(DTYPE, (c, a) -> array(a, 0).dtype().wireName());
    }

    private static NdArray predict(Object model, NdArray x) {
        return switch (model) {
            case Regressor r -> r.predict(x);
            case Classifier c -> c.predict(x);
            case KMeans k -> k.predict(x);
            case Object o ->
                throw new IllegalArgumentException("ml.predict: " + o.getClass().getSimpleName() + " does not predict");
        };
    }

    private static NdArray array(List<Object> args, int i) {
        if (i >= args.size() || !(args.get(i) instanceof NdArray a)) {
            throw new IllegalArgumentException("argument " + i + " is "
                    + (i >= args.size()
                            ? "missing"
                            : args.get(i) == null
                                    ? "null"
                                    : args.get(i).getClass().getSimpleName())
                    + ", expected an array");
        }
        return a;
    }
}
