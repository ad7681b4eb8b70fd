package io.cuwire.spark.internal;

import io.cuwire.cluster.MlTasks;
import io.cuwire.cluster.PartialFits;
import io.cuwire.cluster.TaskRegistry;
import io.cuwire.cluster.TaskType;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import java.io.Serial;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.function.IntFunction;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.storage.StorageLevel;
import scala.Tuple2;

/**
 * The partitions of a Spark data set as {@link PartialFits.Partitions}: each partition's rows are gathered once into
 * one block (cached by Spark), and each {@code run} is one Spark job whose tasks rebuild the block as arrays on the
 * executor's device, run the estimator's partial task ({@link io.cuwire.cluster.MlTasks}) there and send the partial
 * back as cuwire bytes. The arguments travel the same way: serialized once per partition on the driver. Empty
 * partitions take no part.
 *
 * <p>The pass that gathers the blocks also summarizes each partition (rows, features, the labels' range and
 * moments, null or malformed rows), so that bad rows and labels are refused on the driver, with Spark ML's messages,
 * before any task of the fit runs; and the shape and largest-label tasks of {@link PartialFits} are answered from it
 * without a Spark job.
 */
public final class SparkPartitions implements PartialFits.Partitions, AutoCloseable {
    private static final TaskRegistry TASKS = TaskRegistry.standard();

    /** What the labels of a fit must be. */
    public enum Labels {
        /** No labels (k-means, PCA). */
        NONE,
        /** Finite numbers: regression targets. */
        TARGETS,
        /** Class indices {@code 0, 1, ...}. */
        CLASSES
    }

    /**
     * One partition's rows: row-major features and the labels.
     *
     * @param rows the rows
     * @param cols the features of each row
     * @param x {@code rows * cols} features
     * @param y the labels or targets, or {@code null}
     */
    record Block(int rows, int cols, double[] x, double[] y) implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;

        /** The rows of {@code it}; a row that cannot be read is left out and told in {@code summary}. */
        static Block of(Iterator<Row> it, boolean labelled, Summary summary) {
            List<double[]> xs = new ArrayList<>();
            List<Double> ys = new ArrayList<>();
            int cols = -1;
            while (it.hasNext()) {
                Row r = it.next();
                double[] row;
                if (r.isNullAt(0)) {
                    summary.nullFeatures++;
                    continue;
                }
                row = features(r, 0);
                if (cols < 0) {
                    cols = row.length;
                } else if (row.length != cols) {
                    summary.badRow("a row of " + row.length + " features (expected: " + cols
                            + ", as the partition's first row)");
                    continue;
                }
                for (double v : row) {
                    summary.minFeature = Math.min(summary.minFeature, v);
                    if (!Double.isFinite(v)) {
                        summary.badRow("Vector values MUST NOT be NaN or Infinity, but got " + Arrays.toString(row));
                    }
                }
                if (labelled) {
                    double y = r.isNullAt(1) ? Double.NaN : ((Number) r.get(1)).doubleValue();
                    summary.label(y);
                    ys.add(y);
                }
                xs.add(row);
            }
            cols = Math.max(cols, 0);
            double[] x = new double[Math.multiplyExact(xs.size(), cols)];
            for (int i = 0; i < xs.size(); i++) {
                System.arraycopy(xs.get(i), 0, x, i * cols, cols);
            }
            double[] y = null;
            if (labelled) {
                y = new double[ys.size()];
                for (int i = 0; i < y.length; i++) {
                    y[i] = ys.get(i);
                }
            }
            summary.rows = xs.size();
            summary.cols = cols;
            return new Block(xs.size(), cols, x, y);
        }
    }

    /** What the gathering pass saw in one partition. */
    static final class Summary implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;

        int rows;
        int cols;
        long nullFeatures;
        long badRows;
        String firstBadRow;
        long nanLabels;
        double minLabel = Double.POSITIVE_INFINITY;
        double maxLabel = Double.NEGATIVE_INFINITY;
        double nonInteger = Double.NaN;
        double labelSum;
        double labelSumSq;
        double minFeature = Double.POSITIVE_INFINITY;

        void badRow(String what) {
            if (badRows++ == 0) {
                firstBadRow = what;
            }
        }

        void label(double y) {
            if (Double.isNaN(y)) {
                nanLabels++;
                return;
            }
            minLabel = Math.min(minLabel, y);
            maxLabel = Math.max(maxLabel, y);
            if (Double.isNaN(nonInteger) && Double.isFinite(y) && y != Math.rint(y)) {
                nonInteger = y;
            }
            labelSum += y;
            labelSumSq += y * y;
        }
    }

    /** The features of column {@code i} of {@code r}: a Spark ML vector, or an array of numbers. */
    public static double[] features(Row r, int i) {
        Object o = r.get(i);
        if (o instanceof Vector v) {
            return v.toArray();
        }
        if (o == null) {
            throw new IllegalArgumentException("null features in row " + r);
        }
        List<Object> list = r.getList(i);
        double[] out = new double[list.size()];
        for (int j = 0; j < out.length; j++) {
            out[j] = ((Number) list.get(j)).doubleValue();
        }
        return out;
    }

    private final JavaRDD<Tuple2<Block, Summary>> gathered;
    private final JavaRDD<Block> blocks;
    private final List<Summary> summaries;
    private final int[] index;
    private final int count;
    private final boolean classLabels;
    private final long rows;
    private final int features;

    /**
     * Gathers the partitions of {@code data} and checks their rows and labels.
     *
     * @param featuresCol vectors or arrays of numbers
     * @param labelCol the targets or class indices, or {@code null} for an estimator without labels
     * @param labels what the labels must be ({@link Labels#NONE} without a label column)
     * @throws IllegalArgumentException naming what was wrong, if a row has null or malformed features, a label is
     *     null, NaN or infinite, or a class label is negative or not an integer (Spark ML's messages), or if there
     *     are no rows
     */
    public SparkPartitions(Dataset<?> data, String featuresCol, String labelCol, Labels labels) {
        Dataset<Row> columns = labelCol == null ? data.select(featuresCol) : data.select(featuresCol, labelCol);
        boolean labelled = labelCol != null;
        this.gathered = columns.toJavaRDD()
                .mapPartitions(it -> {
                    Summary summary = new Summary();
                    Block b = Block.of(it, labelled, summary);
                    return List.of(new Tuple2<>(b, summary)).iterator();
                })
                .persist(StorageLevel.MEMORY_ONLY());
        this.blocks = gathered.map(Tuple2::_1);
        this.classLabels = labels == Labels.CLASSES;
        List<Summary> seen;
        try {
            seen = gathered.map(Tuple2::_2).collect();
        } catch (RuntimeException e) {
            gathered.unpersist(false);
            throw e;
        }
        this.summaries = seen;
        this.index = new int[summaries.size()];
        int n = 0;
        long total = 0;
        int cols = -1;
        for (int p = 0; p < index.length; p++) {
            Summary s = summaries.get(p);
            index[p] = s.rows > 0 ? n++ : -1;
            total += s.rows;
            if (s.rows > 0 && cols >= 0 && s.cols != cols) {
                gathered.unpersist(false);
                throw new IllegalArgumentException("partition " + p + " has rows of " + s.cols + " features in column '"
                        + featuresCol + "' (expected: " + cols + ", as the partitions before it)");
            }
            cols = s.rows > 0 ? s.cols : cols;
        }
        try {
            check(featuresCol, labelCol, labels);
            if (n == 0) {
                throw new IllegalArgumentException("the data set has no rows to fit on");
            }
        } catch (RuntimeException e) {
            gathered.unpersist(false);
            throw e;
        }
        this.count = n;
        this.rows = total;
        this.features = cols;
    }

    /** Refuses bad rows and labels, with Spark ML's messages where it has them. */
    private void check(String featuresCol, String labelCol, Labels labels) {
        long nullFeatures = 0;
        long nanLabels = 0;
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        double nonInteger = Double.NaN;
        for (Summary s : summaries) {
            if (s.badRows > 0) {
                throw new IllegalArgumentException("column '" + featuresCol + "' has " + s.badRows + " bad row(s); the "
                        + "first: " + s.firstBadRow);
            }
            nullFeatures += s.nullFeatures;
            nanLabels += s.nanLabels;
            min = Math.min(min, s.minLabel);
            max = Math.max(max, s.maxLabel);
            nonInteger = Double.isNaN(nonInteger) ? s.nonInteger : nonInteger;
        }
        if (nullFeatures > 0) {
            throw new IllegalArgumentException("column '" + featuresCol + "' is null in " + nullFeatures
                    + " row(s) (expected: ml vectors or arrays of numbers in every row)");
        }
        if (labels == Labels.NONE || summaries.stream().allMatch(s -> s.rows == 0)) {
            return;
        }
        if (nanLabels > 0) {
            throw new IllegalArgumentException(
                    "Labels MUST NOT be Null or NaN (column '" + labelCol + "': " + nanLabels + " row(s))");
        }
        if (labels == Labels.TARGETS) {
            double inf = Double.isInfinite(min) && min < 0 ? min : Double.isInfinite(max) ? max : Double.NaN;
            if (!Double.isNaN(inf)) {
                throw new IllegalArgumentException(
                        "Labels MUST NOT be Infinity, but got " + inf + " (column '" + labelCol + "')");
            }
            return;
        }
        if (min < 0 || Double.isInfinite(max)) {
            throw new IllegalArgumentException("Labels MUST be in [0, " + Integer.MAX_VALUE + "), but got "
                    + (min < 0 ? min : max) + " (column '" + labelCol + "')");
        }
        if (!Double.isNaN(nonInteger)) {
            throw new IllegalArgumentException(
                    "Labels MUST be Integers, but got " + nonInteger + " (column '" + labelCol + "')");
        }
    }

    /** The rows fitted on, all partitions together. */
    public long rows() {
        return rows;
    }

    /** The features of each row. */
    public int features() {
        return features;
    }

    /** The mean of the labels. */
    public double labelMean() {
        double sum = 0;
        for (Summary s : summaries) {
            sum += s.labelSum;
        }
        return sum / rows;
    }

    /** The sample standard deviation of the labels (divided by {@code rows - 1}; 0 for one row). */
    public double labelStd() {
        double sum = 0;
        double sumSq = 0;
        for (Summary s : summaries) {
            sum += s.labelSum;
            sumSq += s.labelSumSq;
        }
        if (rows < 2) {
            return 0;
        }
        double mean = sum / rows;
        return Math.sqrt(Math.max(0, (sumSq - rows * mean * mean) / (rows - 1)));
    }

    /** The smallest feature value of all rows. */
    public double minFeature() {
        double min = Double.POSITIVE_INFINITY;
        for (Summary s : summaries) {
            min = Math.min(min, s.minFeature);
        }
        return min;
    }

    @Override
    public int count() {
        return count;
    }

    @Override
    public BufferAllocator<?> memory() {
        return Node.current().deviceMemory();
    }

    @Override
    public <T> List<T> run(TaskType<T> task, IntFunction<List<Object>> args) {
        List<T> known = fromSummaries(task, args);
        if (known != null) {
            return known;
        }
        Node node = Node.current();
        List<byte[]> encoded = new ArrayList<>();
        List<int[]> places = new ArrayList<>();
        List<Object> previous = null;
        for (int i = 0; i < count; i++) {
            List<Object> a = new ArrayList<>(args.apply(i));
            if (a.equals(previous)) {
                // the same arguments as the last partition (a round's centers or coefficients): encoded once, and
                // one shared array in the job's closure rather than a copy per partition
                encoded.add(encoded.getLast());
                places.add(places.getLast());
                continue;
            }
            previous = new ArrayList<>(a);
            int x = a.indexOf(PartialFits.Part.X);
            int y = a.indexOf(PartialFits.Part.Y);
            a.replaceAll(o -> o instanceof PartialFits.Part ? null : o);
            places.add(new int[] {x, y});
            try (Serialized s = node.registry().serialize(a, Family.CUDA, Family.HOST)) {
                encoded.add(FrameStreams.toBytes(s, node.hostMemory()));
            }
        }
        String name = task.name();
        int[] idx = index;
        boolean classes = classLabels;
        List<Tuple2<Integer, byte[]>> out = blocks.mapPartitionsWithIndex(
                        (p, it) -> {
                            int i = idx[p];
                            List<Tuple2<Integer, byte[]>> r = new ArrayList<>();
                            if (i >= 0) {
                                Block b = it.next();
                                r.add(new Tuple2<>(
                                        i,
                                        TaskCores.run(() -> runHere(name, encoded.get(i), places.get(i), b, classes))));
                            }
                            return r.iterator();
                        },
                        false)
                .collect();
        byte[][] byPartition = new byte[count][];
        for (Tuple2<Integer, byte[]> t : out) {
            byPartition[t._1()] = t._2();
        }
        List<T> results = new ArrayList<>();
        try {
            for (byte[] bytes : byPartition) {
                try (Serialized s = FrameStreams.fromBytes(bytes, node.frameAllocator(), node.hostMemory())) {
                    results.add(task.resultType().cast(node.registry().deserialize(s, node.target())));
                }
            }
        } catch (RuntimeException e) {
            closeAll(results);
            throw e;
        }
        return results;
    }

    /**
     * The results of {@code task} when the gathering pass knows them: a partition's shape
     * ({@link MlTasks#SHAPE} of its rows) and its largest label ({@link MlTasks#MAX} of its labels); else
     * {@code null}.
     */
    private <T> List<T> fromSummaries(TaskType<T> task, IntFunction<List<Object>> args) {
        List<Object> x = List.of(PartialFits.Part.X);
        List<Object> y = List.of(PartialFits.Part.Y);
        boolean shape = task.name().equals(MlTasks.SHAPE.name());
        boolean max = task.name().equals(MlTasks.MAX.name());
        List<T> out = new ArrayList<>();
        for (int p = 0; p < summaries.size() && (shape || max); p++) {
            Summary s = summaries.get(p);
            if (index[p] < 0) {
                continue;
            }
            if (shape && args.apply(index[p]).equals(x)) {
                out.add(task.resultType().cast(new long[] {s.rows, s.cols}));
            } else if (max && args.apply(index[p]).equals(y) && s.maxLabel > Double.NEGATIVE_INFINITY) {
                out.add(task.resultType().cast(s.maxLabel));
            } else {
                return null;
            }
        }
        return shape || max ? out : null;
    }

    /** In an executor: the task on this partition's block, its result as bytes. */
    private static byte[] runHere(String task, byte[] argBytes, int[] places, Block b, boolean classLabels) {
        Node node = Node.current();
        List<Object> owned = new ArrayList<>();
        try {
            List<Object> args;
            try (Serialized s = FrameStreams.fromBytes(argBytes, node.frameAllocator(), node.hostMemory())) {
                args = new ArrayList<>((List<?>) node.registry().deserialize(s, node.target()));
            }
            owned.addAll(args);
            if (places[0] >= 0) {
                NdArray x = NdArray.fromArray(node.deviceMemory(), b.x(), b.rows(), b.cols());
                owned.add(x);
                args.set(places[0], x);
            }
            if (places[1] >= 0) {
                NdArray y;
                if (classLabels) {
                    int[] labels = new int[b.rows()];
                    for (int i = 0; i < labels.length; i++) {
                        labels[i] = (int) b.y()[i];
                    }
                    y = NdArray.fromArray(node.deviceMemory(), labels, b.rows());
                } else {
                    y = NdArray.fromArray(node.deviceMemory(), b.y(), b.rows());
                }
                owned.add(y);
                args.set(places[1], y);
            }
            ComputeBackend backend = places[0] >= 0
                    ? ComputeBackends.forArray((NdArray) args.get(places[0]))
                    : ComputeBackends.forDevice(node.device());
            Object result = TASKS.get(task)
                    .run(
                            new io.cuwire.cluster.TaskContext(
                                    0, node.device().ordinal(), node.deviceMemory(), node.hostMemory()),
                            args);
            owned.add(result);
            node.countPartialFit(backend);
            try (Serialized s = node.registry().serialize(result, Family.CUDA, Family.HOST)) {
                return FrameStreams.toBytes(s, node.hostMemory());
            }
        } finally {
            closeAll(owned);
        }
    }

    private static void closeAll(List<?> values) {
        List<AutoCloseable> c = new ArrayList<>();
        for (Object o : values) {
            if (o instanceof AutoCloseable a) {
                c.add(a);
            }
        }
        Closeables.closeAll(c);
    }

    /** Drops the cached blocks. */
    @Override
    public void close() {
        gathered.unpersist(false);
    }
}
