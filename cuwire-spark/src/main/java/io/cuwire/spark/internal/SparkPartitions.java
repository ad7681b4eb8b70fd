package io.cuwire.spark.internal;

import io.cuwire.cluster.PartialFits;
import io.cuwire.cluster.TaskRegistry;
import io.cuwire.cluster.TaskType;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import java.io.Serial;
import java.io.Serializable;
import java.util.ArrayList;
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
 */
public final class SparkPartitions implements PartialFits.Partitions, AutoCloseable {
    private static final TaskRegistry TASKS = TaskRegistry.standard();

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

        static Block of(Iterator<Row> it, boolean labelled) {
            List<double[]> xs = new ArrayList<>();
            List<Double> ys = new ArrayList<>();
            while (it.hasNext()) {
                Row r = it.next();
                xs.add(features(r, 0));
                if (labelled) {
                    ys.add(((Number) r.get(1)).doubleValue());
                }
            }
            int cols = xs.isEmpty() ? 0 : xs.getFirst().length;
            double[] x = new double[Math.multiplyExact(xs.size(), cols)];
            for (int i = 0; i < xs.size(); i++) {
                double[] row = xs.get(i);
                if (row.length != cols) {
                    throw new IllegalArgumentException("row " + i + " of a partition has " + row.length
                            + " features (expected: " + cols + ", as the first row)");
                }
                System.arraycopy(row, 0, x, i * cols, cols);
            }
            double[] y = null;
            if (labelled) {
                y = new double[ys.size()];
                for (int i = 0; i < y.length; i++) {
                    y[i] = ys.get(i);
                }
            }
            return new Block(xs.size(), cols, x, y);
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

    private final JavaRDD<Block> blocks;
    private final int[] index;
    private final int count;
    private final boolean classLabels;

    /**
     * Gathers the partitions of {@code data}.
     *
     * @param featuresCol vectors or arrays of numbers
     * @param labelCol the targets or class indices, or {@code null} for an estimator without labels
     * @param classLabels whether labels are class indices (int32 on the executors) rather than float64 targets
     */
    public SparkPartitions(Dataset<?> data, String featuresCol, String labelCol, boolean classLabels) {
        Dataset<Row> columns = labelCol == null ? data.select(featuresCol) : data.select(featuresCol, labelCol);
        boolean labelled = labelCol != null;
        this.blocks = columns.toJavaRDD().mapPartitions(it -> List.of(Block.of(it, labelled)).iterator())
                .persist(StorageLevel.MEMORY_ONLY());
        this.classLabels = classLabels;
        List<Integer> rows = blocks.map(Block::rows).collect();
        this.index = new int[rows.size()];
        int n = 0;
        for (int p = 0; p < index.length; p++) {
            index[p] = rows.get(p) > 0 ? n++ : -1;
        }
        if (n == 0) {
            blocks.unpersist(false);
            throw new IllegalArgumentException("the data set has no rows to fit on");
        }
        this.count = n;
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
        List<Tuple2<Integer, byte[]>> out = blocks.mapPartitionsWithIndex((p, it) -> {
            int i = idx[p];
            List<Tuple2<Integer, byte[]>> r = new ArrayList<>();
            if (i >= 0) {
                r.add(new Tuple2<>(i, runHere(name, encoded.get(i), places.get(i), it.next(), classes)));
            }
            return r.iterator();
        }, false).collect();
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
            Object result = TASKS.get(task).run(new io.cuwire.cluster.TaskContext(0, node.device().ordinal(),
                    node.deviceMemory(), node.hostMemory()), args);
            owned.add(result);
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
        blocks.unpersist(false);
    }
}
