package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Values;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.serialize.OpaqueBlob;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * The driver half of every estimator's partial/merge contract, over any set of {@link Partitions}: which
 * {@link MlTasks} run on each partition, with which arguments, and how the partials merge into one fitted estimator.
 * {@link Distributed} runs the tasks on cluster workers; {@code cuwire-spark} runs them in Spark executors. The
 * estimator passed in is fitted and returned; its fitted state lives in {@link Partitions#memory()}. A classifier
 * whose partitions must agree on the number of classes ({@code nClasses} 0) gets it set from the largest label of
 * all partitions first, as a single-process fit would count it.
 */
public final class PartialFits {
    /** Stand-ins, in a task's arguments, for the partition's own data. */
    public enum Part {
        /** The partition's samples. */
        X,
        /** The partition's targets or labels. */
        Y
    }

    /** Partitions of a data set and a way to run a task on each, where it lives. */
    public interface Partitions {
        /** The number of partitions. */
        int count();

        /**
         * Runs {@code task} on every partition {@code i} with {@code args.apply(i)}, where {@link Part#X} and
         * {@link Part#Y} stand for the partition's data, and returns the results in partition order (the caller
         * closes them).
         */
        <T> List<T> run(TaskType<T> task, IntFunction<List<Object>> args);

        /** Where the merged state lives. */
        BufferAllocator<?> memory();
    }

    private PartialFits() {}

    /** Least squares ({@code LinearRegression}, {@code Ridge}). */
    public static <M extends LinearModel> M fit(Partitions p, M model) {
        return merged(p.run(MlTasks.LINEAR_PARTIAL, i -> List.of(model, Part.X, Part.Y)), parts -> {
            model.merge(parts);
            return model;
        });
    }

    /** K-means: candidates from every partition, reduced on the driver, then Lloyd rounds over the partitions. */
    public static KMeans fit(Partitions p, KMeans model) {
        long seed = (Long) model.params().get("seed");
        List<KMeans.Candidates> candidates =
                p.run(MlTasks.KMEANS_INIT, i -> List.of(model, Part.X, seed + 1_000_003L * i));
        try (NdArray start = model.initialCenters(candidates)) {
            Values.close(candidates);
            candidates = List.of();
            return fit(p, model, start);
        } finally {
            Values.close(candidates);
        }
    }

    /** K-means from the given first centers: each round sends the centers to every partition. */
    public static KMeans fit(Partitions p, KMeans model, NdArray initialCenters) {
        try (KMeans.Lloyd lloyd = model.lloyd(initialCenters)) {
            while (!lloyd.done()) {
                NdArray centers = lloyd.centers();
                List<KMeans.Step> steps = p.run(MlTasks.KMEANS_STEP, i -> List.of(model, Part.X, centers));
                try {
                    lloyd.update(steps);
                } finally {
                    Values.close(steps);
                }
            }
            return lloyd.finish();
        }
    }

    /** Logistic regression: L-BFGS on the driver, each iteration's point sent to every partition for gradients. */
    public static LogisticRegression fit(Partitions p, LogisticRegression model) {
        long[] shape = p.run(MlTasks.SHAPE, i -> List.of(Part.X)).getFirst();
        int classes = classes(p, model);
        DType dtype = DType.byName(p.run(MlTasks.DTYPE, i -> List.of(Part.X)).getFirst());
        try (LogisticRegression.Solver s = model.solver((int) shape[1], classes, dtype, p.memory())) {
            while (!s.done()) {
                NdArray coef = s.coef();
                NdArray intercept = s.intercept();
                List<LogisticRegression.Gradient> g =
                        p.run(MlTasks.LOGREG_GRADIENT, i -> List.of(model, Part.X, Part.Y, coef, intercept));
                try {
                    s.update(g);
                } finally {
                    Values.close(g);
                }
            }
            return s.finish();
        }
    }

    /** PCA from every partition's mean and scatter. */
    public static PCA fit(Partitions p, PCA model) {
        return merged(p.run(MlTasks.PCA_PARTIAL, i -> List.of(model, Part.X)), model::merge);
    }

    /** Multinomial naive Bayes from every partition's counts. */
    public static MultinomialNB fit(Partitions p, MultinomialNB model) {
        model.setParams(Map.of("nClasses", classes(p, model)));
        return merged(p.run(MlTasks.NB_PARTIAL, i -> List.of(model, Part.X, Part.Y)), model::merge);
    }

    /** A random-forest classifier: each partition grows its share of the trees; the driver concatenates them. */
    public static RandomForestClassifier fit(Partitions p, RandomForestClassifier model) {
        model.setParams(Map.of("nClasses", classes(p, model)));
        return merged(forest(p, model), model::merge);
    }

    /** Nearest-neighbor classification: every partition's rows and labels, concatenated on the driver. */
    public static KNeighborsClassifier fit(Partitions p, KNeighborsClassifier model) {
        return merged(p.run(MlTasks.KNN_PARTIAL, i -> List.of(model, Part.X, Part.Y)), model::merge);
    }

    /** A random-forest regressor, like the classifier. */
    public static RandomForestRegressor fit(Partitions p, RandomForestRegressor model) {
        return merged(forest(p, model), model::merge);
    }

    /** The model's {@code nClasses}, or when it is 0, one more than the largest label of all partitions. */
    private static int classes(Partitions p, Estimator model) {
        int declared = (Integer) model.params().get("nClasses");
        if (declared > 0) {
            return declared;
        }
        double max = 0;
        for (Double m : p.run(MlTasks.MAX, i -> List.of(Part.Y))) {
            max = Math.max(max, m);
        }
        return (int) max + 1;
    }

    /** {@code merge} of {@code parts}, which are closed afterwards. */
    private static <P, M> M merged(List<P> parts, Function<List<P>, M> merge) {
        try {
            return merge.apply(parts);
        } finally {
            Values.close(parts);
        }
    }

    private static List<OpaqueBlob> forest(Partitions p, Object model) {
        long count = p.count();
        return p.run(MlTasks.FOREST_PARTIAL, i -> List.of(model, Part.X, Part.Y, (long) i, count));
    }
}
