package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Values;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;

/**
 * Distributed estimators: fit on partitions held by the workers, merge on the client into one single-device
 * estimator, then predict or transform on every partition after one broadcast. Each {@code fit} runs the
 * estimator's partial half on the worker that holds each partition (partition {@code i} of {@code x} with
 * partition {@code i} of {@code y}, on the same worker), brings the partials to the client and merges them there;
 * iterative estimators (k-means, logistic regression) send their small state with every round. The fitted state
 * lives in the client's memory; the estimator passed in is fitted and returned.
 *
 * <p>Pass estimators unfitted: they travel to every worker with each partial request.
 */
public final class Distributed {
    private Distributed() {}

    /** Least squares ({@code LinearRegression}, {@code Ridge}) over the partitions. */
    public static <M extends LinearModel> M fit(Client client, M model, List<ObjectRef> x, List<ObjectRef> y) {
        return PartialFits.fit(on(client, x, y), model);
    }

    /** K-means: candidates from every partition, reduced on the client, then Lloyd rounds over the partitions. */
    public static KMeans fit(Client client, KMeans model, List<ObjectRef> x) {
        return PartialFits.fit(on(client, x, null), model);
    }

    /** K-means from the given first centers: each round sends the centers to every partition. */
    public static KMeans fit(Client client, KMeans model, List<ObjectRef> x, NdArray initialCenters) {
        return PartialFits.fit(on(client, x, null), model, initialCenters);
    }

    /** Logistic regression: L-BFGS on the client, each iteration's point sent to every partition for gradients. */
    public static LogisticRegression fit(
            Client client, LogisticRegression model, List<ObjectRef> x, List<ObjectRef> y) {
        return PartialFits.fit(on(client, x, y), model);
    }

    /** PCA from every partition's mean and scatter. */
    public static PCA fit(Client client, PCA model, List<ObjectRef> x) {
        return PartialFits.fit(on(client, x, null), model);
    }

    /** Multinomial naive Bayes from every partition's counts. */
    public static MultinomialNB fit(Client client, MultinomialNB model, List<ObjectRef> x, List<ObjectRef> y) {
        return PartialFits.fit(on(client, x, y), model);
    }

    /** A random-forest classifier: each partition grows its share of the trees; the client concatenates them. */
    public static RandomForestClassifier fit(
            Client client, RandomForestClassifier model, List<ObjectRef> x, List<ObjectRef> y) {
        return PartialFits.fit(on(client, x, y), model);
    }

    /** A random-forest regressor, like the classifier. */
    public static RandomForestRegressor fit(
            Client client, RandomForestRegressor model, List<ObjectRef> x, List<ObjectRef> y) {
        return PartialFits.fit(on(client, x, y), model);
    }

    /** Nearest-neighbor classification: every partition's rows and labels, concatenated on the client. */
    public static KNeighborsClassifier fit(
            Client client, KNeighborsClassifier model, List<ObjectRef> x, List<ObjectRef> y) {
        return PartialFits.fit(on(client, x, y), model);
    }

    /**
     * The partitions {@code x} (with {@code y}, or none) on the workers that hold them: partition {@code i}'s task
     * runs on the worker of {@code x.get(i)}, with {@link PartialFits.Part}s replaced by the refs.
     */
    private static PartialFits.Partitions on(Client client, List<ObjectRef> x, List<ObjectRef> y) {
        return new PartialFits.Partitions() {
            @Override
            public int count() {
                return x.size();
            }

            @Override
            public <T> List<T> run(TaskType<T> task, IntFunction<List<Object>> args) {
                return partials(x, i -> {
                    List<Object> a = new ArrayList<>(args.apply(i));
                    a.replaceAll(o -> o == PartialFits.Part.X ? x.get(i) : o == PartialFits.Part.Y ? y.get(i) : o);
                    return client.call(x.get(i).worker(), task, a.toArray());
                });
            }

            @Override
            public BufferAllocator<?> memory() {
                return client.memory();
            }
        };
    }

    /**
     * Nearest neighbours over partitioned training rows: every partition answers its {@code k} nearest rows of
     * each query (ids offset by the rows before it), and the client merges them.
     *
     * @param fitted {@link NearestNeighbors} fitted on each partition, on its worker ({@link MlTasks#NEIGHBORS_FIT}
     *     with {@link Client#submit})
     * @param rows the rows of each partition, for the id offsets
     */
    public static Neighbors kneighbors(Client client, List<ObjectRef> fitted, long[] rows, NdArray queries, int k) {
        long[] offsets = new long[fitted.size()];
        for (int i = 1; i < offsets.length; i++) {
            offsets[i] = offsets[i - 1] + rows[i - 1];
        }
        List<Neighbors> parts = partials(
                fitted,
                i -> client.call(
                        fitted.get(i).worker(),
                        MlTasks.NEIGHBORS_PARTIAL,
                        fitted.get(i),
                        queries,
                        (long) k,
                        offsets[i]));
        try {
            return Neighbors.merge(parts, k);
        } finally {
            Values.close(parts);
        }
    }

    /** Predictions of the broadcast {@code model} on every partition, kept on the workers. */
    public static List<ObjectRef> predict(Client client, ModelHandle model, List<ObjectRef> x) {
        return onEach(client, MlTasks.PREDICT, model, x);
    }

    /** The broadcast {@code model}'s transform of every partition, kept on the workers. */
    public static List<ObjectRef> transform(Client client, ModelHandle model, List<ObjectRef> x) {
        return onEach(client, MlTasks.TRANSFORM, model, x);
    }

    private static List<ObjectRef> onEach(Client client, TaskType<?> task, ModelHandle model, List<ObjectRef> x) {
        List<CompletableFuture<ObjectRef>> futures = new ArrayList<>();
        for (ObjectRef r : x) {
            futures.add(client.submit(r.worker(), task, model, r));
        }
        return Client.joinAll(futures);
    }

    /** Runs one request per partition, all at once, and waits for all (closing the results if one fails). */
    private static <T> List<T> partials(List<ObjectRef> parts, IntFunction<CompletableFuture<T>> request) {
        List<CompletableFuture<T>> futures = new ArrayList<>();
        for (int i = 0; i < parts.size(); i++) {
            futures.add(request.apply(i));
        }
        return Client.joinAll(futures);
    }
}
