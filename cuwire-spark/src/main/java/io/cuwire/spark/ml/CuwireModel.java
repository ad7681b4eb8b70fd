package io.cuwire.spark.ml;

import io.cuwire.cluster.MlTasks;
import io.cuwire.cluster.TaskRegistry;
import io.cuwire.memory.NdArray;
import io.cuwire.cluster.TaskType;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.ModelRef;
import io.cuwire.spark.internal.FrameStreams;
import io.cuwire.spark.internal.Node;
import io.cuwire.spark.internal.SparkPartitions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.ml.Model;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.DefaultParamsReader$;
import org.apache.spark.ml.util.DefaultParamsWriter$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.ml.util.MLWritable;
import org.apache.spark.ml.util.MLWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A fitted cuwire estimator as a Spark ML model. The fitted state lives in the driver's device memory;
 * {@link #transform} broadcasts it once as a handle ({@link CuwireSpark#broadcast}) and runs it in the executors,
 * each executor JVM fetching the frames once: a predicting model appends a double column {@code predictionCol}, a
 * transforming one (PCA) a column {@code outputCol} of ml vectors. Saved with Spark ML persistence: the params as
 * Spark's JSON metadata, the fitted estimator as a cuwire header plus frames in {@code cuwire/model.cuwire} (long
 * offsets: models over 2 GiB work).
 *
 * <h2>Lifetime</h2>
 * The fitted state is shared, with a count of its holders: this model, each of its {@link #copy copies}, and the
 * plan of each {@code DataFrame} that {@link #transform} returned (and of those derived from it) hold it. It is
 * released — the broadcast closed, which evicts the executors' copies, and the driver's device memory freed — once
 * none of them holds it any more: a holder lets go when it is {@link #close() closed}, or when it becomes
 * unreachable and the garbage collector has noticed. So a lazy {@code DataFrame} works for as long as it exists,
 * whatever happened to the model it came from; closing one copy never breaks another; and a model nobody closes
 * (as Spark's {@code CrossValidator}, {@code Pipeline} and the rest never do) is released after a GC. Closing the
 * model and its copies releases the memory at once when no DataFrame they made is still around.
 */
public final class CuwireModel extends Model<CuwireModel> implements MLWritable, AutoCloseable {
    private static final int BATCH_ROWS = 8192;
    private static final TaskRegistry TASKS = TaskRegistry.standard();

    /** What a model appends to each row: a prediction, or the transformed features. */
    enum Output {
        /** {@code predict}: a double per row, in {@code predictionCol}. */
        PREDICTION(MlTasks.PREDICT, DataTypes.DoubleType),
        /** {@code transform}: an ml vector per row, in {@code outputCol}. */
        TRANSFORM(MlTasks.TRANSFORM, new VectorUDT());

        private final TaskType<NdArray> task;
        private final DataType type;

        Output(TaskType<NdArray> task, DataType type) {
            this.task = task;
            this.type = type;
        }

        /** The output of {@code e}'s fitted models. */
        static Output of(Estimator e) {
            return e instanceof PCA ? TRANSFORM : PREDICTION;
        }

        /** The column type. */
        DataType type() {
            return type;
        }

        /** The column values of {@code result}, one per row: boxed doubles or dense vectors. */
        Object[] values(NdArray result) {
            double[] v = doubles(result);
            if (this == PREDICTION) {
                Object[] out = new Object[v.length];
                for (int i = 0; i < v.length; i++) {
                    out[i] = v[i];
                }
                return out;
            }
            int rows = (int) result.dim(0);
            int cols = rows == 0 ? 0 : v.length / rows;
            Object[] out = new Object[rows];
            for (int i = 0; i < rows; i++) {
                out[i] = Vectors.dense(Arrays.copyOfRange(v, i * cols, (i + 1) * cols));
            }
            return out;
        }
    }

    private final String uid;
    private final Param<String> featuresCol;
    private final Param<String> predictionCol;
    private final Param<String> outputCol;
    private final FittedState.Hold hold;
    private final Output output;

    /** A model of the fitted cuwire estimator {@code fitted}, which it owns from now on (shared with its copies). */
    public CuwireModel(String uid, Estimator fitted) {
        this(uid, new FittedState(fitted));
    }

    /** A model holding {@code state}. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction; the hold names its holder
    private CuwireModel(String uid, FittedState state) {
        this.uid = uid;
        this.hold = state.hold(this);
        this.output = Output.of(state.estimator());
        this.featuresCol = new Param<>(this, "featuresCol", "features column: ml vectors or arrays of numbers");
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column, of a predicting model");
        this.outputCol = new Param<>(this, "outputCol", "column of ml vectors, of a transforming model (PCA)");
        setDefault(featuresCol, "features");
        setDefault(predictionCol, "prediction");
        setDefault(outputCol, "output");
    }

    @Override
    public String uid() {
        return uid;
    }

    public Param<String> featuresCol() {
        return featuresCol;
    }

    public Param<String> predictionCol() {
        return predictionCol;
    }

    public Param<String> outputCol() {
        return outputCol;
    }

    public String getFeaturesCol() {
        return getOrDefault(featuresCol);
    }

    public String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public String getOutputCol() {
        return getOrDefault(outputCol);
    }

    public CuwireModel setFeaturesCol(String value) {
        set(featuresCol, value);
        return this;
    }

    public CuwireModel setPredictionCol(String value) {
        set(predictionCol, value);
        return this;
    }

    public CuwireModel setOutputCol(String value) {
        set(outputCol, value);
        return this;
    }

    /** The param naming the column this model appends: {@link #predictionCol} or, for PCA, {@link #outputCol}. */
    public Param<String> appendedCol() {
        return output == Output.PREDICTION ? predictionCol : outputCol;
    }

    /**
     * The fitted cuwire estimator, in the driver's memory, shared with this model's copies (do not close it).
     *
     * @throws IllegalStateException if this model was closed
     */
    public Estimator estimator() {
        return state().estimator();
    }

    /**
     * The handle tasks use, broadcasting the fitted estimator on first call (one broadcast for this model and its
     * copies).
     *
     * @throws IllegalStateException if this model was closed
     */
    public ModelRef<Estimator> ref() {
        return state().ref();
    }

    /** Whether {@link #close()} ran on this model (its copies and the DataFrames it made are not affected). */
    public boolean isClosed() {
        return hold.isClosed();
    }

    /** The shared state, if this model is open. */
    FittedState state() {
        if (hold.isClosed()) {
            throw new IllegalStateException(getClass().getSimpleName() + " " + uid + " was closed (its copies and "
                    + "the DataFrames it made keep working)");
        }
        return hold.state();
    }

    /**
     * The rows of {@code dataset} with this model's column appended, computed lazily in the executors; the result's
     * plan holds the fitted state until the result is gone (see the class comment).
     *
     * @throws IllegalStateException if this model was closed
     */
    @Override
    public Dataset<Row> transform(Dataset<?> dataset) {
        StructType out = transformSchema(dataset.schema());
        FittedState.PlanHandle plan = new FittedState.PlanHandle(state());
        Output o = output;
        int features = dataset.schema().fieldIndex(getFeaturesCol());
        JavaRDD<Row> rows = dataset.toDF().javaRDD().mapPartitions(it -> apply(plan.ref(), o, features, it));
        return dataset.sparkSession().createDataFrame(rows, out);
    }

    /**
     * In an executor: the rows with the model's output appended, a batch of rows at a time as Spark pulls them
     * (one batch in memory, not the whole partition).
     */
    private static Iterator<Row> apply(ModelRef<Estimator> ref, Output output, int features, Iterator<Row> rows) {
        return new Iterator<>() {
            private final List<Row> batch = new ArrayList<>();
            private Object[] results = new Object[0];
            private int next;

            @Override
            public boolean hasNext() {
                if (next == batch.size()) {
                    batch.clear();
                    next = 0;
                    while (batch.size() < BATCH_ROWS && rows.hasNext()) {
                        batch.add(rows.next());
                    }
                    results = batch.isEmpty() ? results : applyBatch(ref, output, features, batch);
                }
                return next < batch.size();
            }

            @Override
            public Row next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                Row r = batch.get(next);
                Object[] values = new Object[r.length() + 1];
                for (int j = 0; j < r.length(); j++) {
                    values[j] = r.get(j);
                }
                values[r.length()] = results[next++];
                return RowFactory.create(values);
            }
        };
    }

    private static Object[] applyBatch(ModelRef<Estimator> ref, Output output, int features, List<Row> batch) {
        Node node = Node.current();
        double[][] x = new double[batch.size()][];
        for (int i = 0; i < x.length; i++) {
            x[i] = SparkPartitions.features(batch.get(i), features);
        }
        try (NdArray input = NdArray.fromMatrix(node.deviceMemory(), x)) {
            io.cuwire.cluster.TaskContext ctx = new io.cuwire.cluster.TaskContext(0, node.device().ordinal(),
                    node.deviceMemory(), node.hostMemory());
            try (NdArray p = ref.apply(m -> (NdArray) TASKS.get(output.task.name()).run(ctx, List.of(m, input)))) {
                return output.values(p);
            }
        }
    }

    /** The elements of a float or integer array as doubles. */
    private static double[] doubles(NdArray p) {
        return switch (p.dtype()) {
            case FLOAT64 -> p.toDoubleArray();
            case FLOAT32 -> {
                float[] f = p.toFloatArray();
                double[] d = new double[f.length];
                for (int i = 0; i < f.length; i++) {
                    d[i] = f[i];
                }
                yield d;
            }
            case INT32 -> Arrays.stream(p.toIntArray()).asDoubleStream().toArray();
            default -> Arrays.stream(p.toLongArray()).asDoubleStream().toArray();
        };
    }

    /** {@code schema} with {@code output}'s column {@code column}, after checking that {@code features} is there. */
    static StructType withOutput(StructType schema, String features, Output output, String column) {
        schema.fieldIndex(features);
        if (List.of(schema.fieldNames()).contains(column)) {
            throw new IllegalArgumentException("column '" + column + "' exists already in " + schema);
        }
        return schema.add(column, output.type(), false);
    }

    @Override
    public StructType transformSchema(StructType schema) {
        return withOutput(schema, getFeaturesCol(), output, getOrDefault(appendedCol()));
    }

    /**
     * A copy sharing this model's fitted state, with {@code extra}'s params.
     *
     * @throws IllegalStateException if this model was closed
     */
    @Override
    public CuwireModel copy(ParamMap extra) {
        CuwireModel copy = copyValues(new CuwireModel(uid, state()), extra);
        return copy.setParent(parent());
    }

    /**
     * Lets go of the fitted state: released now (the broadcast closed, evicting the executors' copies, and the
     * driver's memory freed) if no copy and no DataFrame holds it any more, else when the last of them lets go.
     * This model cannot be used afterwards; closing twice is harmless.
     */
    @Override
    public void close() {
        hold.close();
    }

    // ---------------------------------------------------------------- persistence

    private static final String DATA = "cuwire/model.cuwire";

    @Override
    public MLWriter write() {
        return new Writer(this);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwireModel> read() {
        return new Reader();
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwireModel load(String path) {
        return read().load(path);
    }

    private static final class Writer extends MLWriter {
        private final CuwireModel model;

        Writer(CuwireModel model) {
            this.model = model;
        }

        @Override
        public void saveImpl(String path) {
            DefaultParamsWriter$.MODULE$.saveMetadata(model, path, sparkSession());
            Node node = Node.current();
            Path file = new Path(path, DATA);
            try {
                FileSystem fs = file.getFileSystem(sc().hadoopConfiguration());
                try (FSDataOutputStream out = fs.create(file, true);
                        Serialized s = node.registry().serialize(model.estimator(), Family.CUDA, Family.HOST)) {
                    FrameStreams.write(s, out, node.hostMemory());
                }
            } catch (IOException e) {
                throw new UncheckedIOException("saving " + model.estimator() + " to " + file, e);
            }
        }
    }

    private static final class Reader extends MLReader<CuwireModel> {
        @Override
        public CuwireModel load(String path) {
            DefaultParamsReader.Metadata meta = DefaultParamsReader$.MODULE$.loadMetadata(path, sparkSession(),
                    CuwireModel.class.getName());
            Node node = Node.current();
            Path file = new Path(path, DATA);
            Estimator fitted;
            try {
                FileSystem fs = file.getFileSystem(sc().hadoopConfiguration());
                try (FSDataInputStream in = fs.open(file);
                        Serialized s = FrameStreams.read(in, node.frameAllocator(), node.hostMemory(),
                                Limits.DEFAULT)) {
                    fitted = (Estimator) node.registry().deserialize(s, node.target());
                }
            } catch (IOException e) {
                throw new UncheckedIOException("loading a cuwire model from " + file, e);
            }
            CuwireModel model = new CuwireModel(meta.uid(), fitted);
            meta.getAndSetParams(model, scala.Option.apply(null));
            return model;
        }
    }
}
