package io.cuwire.ml.ensemble;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.HistogramTrees;
import io.cuwire.ml.Param;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.serialize.OpaqueBlob;
import java.io.Serial;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * A random forest of CART trees: {@link RandomForestClassifier} and {@link RandomForestRegressor}.
 *
 * <h2>State: one opaque blob</h2>
 * The fitted forest is a single {@link OpaqueBlob} in the {@value ForestLayout#FORMAT} layout, on the device it was
 * fitted on; it travels with the registry's own blob serializer (one device frame in the {@code cuda} family), as
 * cuML's forests travel as one treelite blob. Prediction walks that layout where it lives
 * ({@link io.cuwire.ml.ComputeBackend#predictForest}).
 *
 * <h2>Distribution, as cuML's Dask random forest</h2>
 * Partition {@code p} of {@code P} grows its share of the {@link #nEstimators} trees on its own rows
 * ({@link #partial}); {@link RandomForestClassifier#merge} (and the regressor's) concatenates the partitions' trees
 * into one forest. Tree {@code t} is grown with seed {@code seed + t}, so a forest depends only on the data each tree
 * saw.
 *
 * <h2>Splits: histograms by default, exact on request</h2>
 * By default ({@link #exactSplits} false) the partition's features are quantized once into at most {@link #maxBins}
 * bins at their quantiles ({@link ForestBins}) and each node's best split is found on histograms of its rows' bins,
 * as scikit-learn's histogram estimators, XGBoost and cuML do; thresholds are the bins' edges. With
 * {@code exactSplits} the trees are scikit-learn's exact CART trees (thresholds halfway between consecutive values
 * of the node), as before histograms. Either way tree {@code t} draws its bootstrap sample and its features per split
 * from seed {@code seed + t}, in the same order; a feature of at most {@code maxBins} distinct values splits the
 * same rows both ways.
 *
 * <p>Trees are grown on the host from a copy of the partition (counted by the copy engine when it lives on a
 * device), several at once on the common fork-join pool, and the features of a large node are scanned in parallel;
 * each tree depends only on its seed and the data, so the forest is the same whatever the parallelism. A backend
 * with its own histogram tree builder ({@link io.cuwire.ml.ComputeBackend#histogramTrees}: cuwire-ml-cuda's, on a
 * GPU) grows the histogram-split trees where the partition lives, one tree after another, from the same samples and
 * feature draws; the bins' edges are placed on the host from a copy either way.
 */
public abstract sealed class RandomForest extends Estimator permits RandomForestClassifier, RandomForestRegressor {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The number of trees in the whole forest. */
    @Param
    int nEstimators = 100;

    /** The deepest a tree grows. */
    @Param
    int maxDepth = 16;

    /** The fewest samples a node needs to be split. */
    @Param
    int minSamplesSplit = 2;

    /** The fewest samples in a leaf. */
    @Param
    int minSamplesLeaf = 1;

    /** The share of the features tried at each split, in (0, 1]; 0 means {@code sqrt(features)}. */
    @Param
    double maxFeatures;

    /** Whether each tree sees a bootstrap sample (with replacement) of its partition. */
    @Param
    boolean bootstrap = true;

    /** The seed; tree {@code t} uses {@code seed + t}. */
    @Param
    long seed;

    /** Whether splits are exact (every threshold of the node) rather than found on histograms of binned features. */
    @Param
    boolean exactSplits;

    /** The most bins per feature for histogram splits, in {@code 2 .. 256}. */
    @Param
    int maxBins = ForestBins.MAX_BINS;

    /** The fitted forest. */
    OpaqueBlob forest;

    RandomForest() {}

    /** Checks the targets; returns the number of classes, or 0 for a regressor: what the leaves hold. */
    abstract int leafClasses(NdArray x, NdArray y, String op);

    /** The targets as doubles (class indices for a classifier). */
    abstract double[] targets(NdArray y);

    @Override
    public boolean isFitted() {
        return forest != null;
    }

    /** The fitted forest; owned by the estimator. */
    public OpaqueBlob forest() {
        checkFitted();
        return forest;
    }

    /** The counts of the fitted forest. */
    public ForestLayout.Info info() {
        checkFitted();
        return ForestLayout.info(forest);
    }

    /** Grows the whole forest on one partition. */
    void fitForest(NdArray x, NdArray y) {
        try (OpaqueBlob part = partial(x, y, 0, 1)) {
            mergeForests(List.of(part));
        }
    }

    /**
     * Grows partition {@code index}'s share of the trees ({@code nEstimators * index / count} up to the next
     * partition's) on ({@code x}, {@code y}); the blob lives where {@code x} does.
     */
    public OpaqueBlob partial(NdArray x, NdArray y, int index, int count) {
        String op = getClass().getSimpleName() + ".partial";
        checkTraining(op, x);
        if (count < 1 || index < 0 || index >= count) {
            throw new IllegalArgumentException(
                    op + ": partition " + index + " of " + count + " (expected: 0 <= index < count)");
        }
        if (nEstimators < 1) {
            throw new IllegalArgumentException(op + ": nEstimators " + nEstimators + " (expected: >= 1)");
        }
        int classes = leafClasses(x, y, op);
        int n = Math.toIntExact(x.dim(0));
        int d = Math.toIntExact(x.dim(1));
        if (!exactSplits && (maxBins < 2 || maxBins > ForestBins.MAX_BINS)) {
            throw new IllegalArgumentException(
                    op + ": maxBins " + maxBins + " (expected: 2 .. " + ForestBins.MAX_BINS + ")");
        }
        double[] xv = HostArrays.doubles(x);
        double[] target = targets(y);
        if (!(maxFeatures >= 0 && maxFeatures <= 1)) {
            throw new IllegalArgumentException(
                    op + ": maxFeatures " + maxFeatures + " (expected: 0 for sqrt, or a " + "share in (0, 1])");
        }
        int features =
                maxFeatures == 0 ? Math.max(1, (int) Math.sqrt(d)) : Math.max(1, (int) Math.ceil(maxFeatures * d));
        Cart.Params params = new Cart.Params(maxDepth, minSamplesSplit, minSamplesLeaf, Math.min(features, d));
        int first = (int) ((long) nEstimators * index / count);
        int last = (int) ((long) nEstimators * (index + 1) / count);
        double[][] edges = exactSplits ? null : ForestBins.edges(xv, n, d, maxBins);
        if (edges != null) {
            Optional<HistogramTrees> own = backend(x).histogramTrees(x, target, classes, edges);
            if (own.isPresent()) {
                try (HistogramTrees grower = own.get()) {
                    HistogramTrees.Params p = new HistogramTrees.Params(maxDepth, minSamplesSplit, minSamplesLeaf);
                    List<ForestLayout.Tree> trees = new ArrayList<>();
                    for (int t = first; t < last; t++) {
                        SplittableRandom random = new SplittableRandom(seed + t);
                        int[] rows = sample(random, n);
                        trees.add(grower.grow(rows, () -> Cart.draw(random, d, params.maxFeatures()), p));
                    }
                    return upload(memoryFor(x), trees, d, classes);
                }
            }
        }
        ForestBins bins = edges == null ? null : ForestBins.quantize(xv, n, d, edges);
        List<ForestLayout.Tree> trees = IntStream.range(first, last)
                .parallel()
                .mapToObj(t -> {
                    SplittableRandom random = new SplittableRandom(seed + t);
                    int[] rows = sample(random, n);
                    return bins == null
                            ? Cart.grow(xv, d, target, classes, rows, params, random)
                            : Cart.grow(bins, target, classes, rows, params, random);
                })
                .toList();
        return upload(memoryFor(x), trees, d, classes);
    }

    /** Tree {@code t}'s rows: a bootstrap sample drawn first from its random sequence, or every row. */
    private int[] sample(SplittableRandom random, int n) {
        int[] rows = new int[n];
        for (int i = 0; i < n; i++) {
            rows[i] = bootstrap ? random.nextInt(n) : i;
        }
        return rows;
    }

    private static OpaqueBlob upload(BufferAllocator<?> mem, List<ForestLayout.Tree> trees, int features, int classes) {
        byte[] bytes = ForestLayout.encode(trees, features, classes);
        ForestLayout.Info info = ForestLayout.infoOf(trees, features, classes);
        Buffer buffer = mem.allocate(bytes.length);
        try {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes), buffer, 0);
            return OpaqueBlob.adopt(ForestLayout.FORMAT, ForestLayout.metadata(info), buffer);
        } catch (RuntimeException | Error e) {
            buffer.close();
            throw e;
        }
    }

    /** Concatenates the partitions' trees into this estimator's forest, where the first blob lives. */
    void mergeForests(List<OpaqueBlob> parts) {
        String op = getClass().getSimpleName() + ".merge";
        if (parts.isEmpty()) {
            throw new IllegalArgumentException(op + ": no partials");
        }
        ForestLayout.Info first = ForestLayout.info(parts.getFirst());
        List<ForestLayout.Tree> trees = new ArrayList<>();
        for (OpaqueBlob part : parts) {
            ForestLayout.Info info = ForestLayout.info(part);
            if (info.features() != first.features() || info.classes() != first.classes()) {
                throw new IllegalArgumentException(op + ": a forest of " + info.features() + " features and "
                        + info.classes() + " classes (expected: " + first.features() + " and " + first.classes()
                        + ", as the first; set nClasses so that every partition agrees)");
            }
            trees.addAll(ForestLayout.decode(part));
        }
        BufferAllocator<?> mem = parts.getFirst().buffer().allocator();
        if (mem == null) {
            throw new IllegalStateException(op + ": " + parts.getFirst() + " has no allocator to put the forest in");
        }
        OpaqueBlob merged = upload(mem, trees, first.features(), first.classes());
        close();
        forest = merged;
    }
}
