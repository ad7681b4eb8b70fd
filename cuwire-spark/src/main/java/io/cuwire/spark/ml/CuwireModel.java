package io.cuwire.spark.ml;

import io.cuwire.memory.Closeables;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.Estimator;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.ModelRef;
import io.cuwire.spark.internal.FrameStreams;
import io.cuwire.spark.internal.Node;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.BiFunction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.ml.Model;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.DefaultParamsReader$;
import org.apache.spark.ml.util.DefaultParamsWriter$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.ml.util.MLWritable;
import org.apache.spark.ml.util.MLWriter;
import org.apache.spark.ml.util.ReadWriteUtils$;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.collection.Seq;

/**
 * A fitted cuwire estimator as a Spark ML model: the base of the typed models each stage's {@code fit} returns
 * ({@link CuwireLinearRegressionModel}, {@link CuwireKMeansModel}, {@link CuwireLogisticRegressionModel}, …). The
 * fitted state lives in the driver's device memory; {@link #transform} broadcasts it once as a handle
 * ({@link CuwireSpark#broadcast}) and computes the model's columns in the executors, each executor JVM fetching the
 * frames once, in blocks of a partition's rows on the executor's device. Saved with Spark ML persistence: the params as
 * Spark's JSON metadata, the fitted estimator as a cuwire header plus frames in {@code cuwire/model.cuwire} (long
 * offsets: models over 2 GiB work).
 *
 * <h2>Spark Connect</h2>
 * The models are registered for Connect's ML discovery (listed in
 * {@code META-INF/services/org.apache.spark.ml.Transformer}, each with a public no-argument constructor, whose model
 * has no fitted state). Connect's model cache sizes a model by
 * {@link #estimatedSize()}: the fitted estimator as cuwire serializes it. When the cache offloads a model to the
 * driver's disk it saves it with {@code saveToLocal} (written to the local file system whatever Hadoop's default one
 * is); its reload ({@code loadFromLocal}) reads only the params: the estimator is read into device memory when the
 * model is first used, and the offloaded copy the cache dropped from memory freed its device memory when the garbage
 * collector found it unreachable (see Lifetime).
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
 *
 * @param <M> the concrete model
 */
public abstract class CuwireModel<M extends CuwireModel<M>> extends Model<M> implements MLWritable, AutoCloseable {
    /** How an executor computes one appended column for a batch of rows (on its device): a value per row. */
    @FunctionalInterface
    interface Scoring extends Serializable {
        /** The column's values for the rows of {@code x}, computed with the fitted estimator {@code fitted}. */
        Object[] values(Estimator fitted, NdArray x);
    }

    /**
     * A column the model appends.
     *
     * @param field the column's name, type and metadata
     * @param scoring how its values are computed
     */
    record Output(StructField field, Scoring scoring) implements Serializable {}

    private final String uid;
    private final FittedState.Hold hold;
    private final Param<String> featuresCol;

    /** A model holding {@code state}. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction; the hold names its holder
    CuwireModel(String uid, FittedState state) {
        this.uid = uid;
        this.hold = state.hold(this);
        this.featuresCol = new Param<>(this, "featuresCol", "features column: ml vectors or arrays of numbers");
        setDefault(featuresCol, "features");
    }

    @Override
    public final String uid() {
        return uid;
    }

    /**
     * The fitted estimator's size as cuwire serializes it (header and frames, in bytes): what Spark Connect's model
     * cache counts against its limits. Computed once per fitted state; a model reloaded from disk answers with the
     * saved file's size, without reading it into device memory.
     *
     * @throws IllegalStateException if this model was closed
     */
    @Override
    public long estimatedSize() {
        return state().sizeBytes(fitted -> {
            try (Serialized s = Node.current().registry().serialize(fitted, Family.CUDA, Family.HOST)) {
                return s.encodeHeader().length + s.totalFrameBytes();
            }
        });
    }

    /** Whether the fitted estimator is in device memory (false for a reloaded model not used yet): for tests. */
    final boolean isLoaded() {
        return state().isLoaded();
    }

    /** The features column: ml vectors or arrays of numbers. */
    public final Param<String> featuresCol() {
        return featuresCol;
    }

    public final String getFeaturesCol() {
        return getOrDefault(featuresCol);
    }

    public final M setFeaturesCol(String value) {
        set(featuresCol, value);
        return self();
    }

    /** This model, as its concrete type. */
    @SuppressWarnings("unchecked")
    final M self() {
        return (M) this;
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
    public final ModelRef<Estimator> ref() {
        return state().ref();
    }

    /** Whether {@link #close()} ran on this model (its copies and the DataFrames it made are not affected). */
    public final boolean isClosed() {
        return hold.isClosed();
    }

    /** The shared state, if this model is open. */
    final FittedState state() {
        if (hold.isClosed()) {
            throw new IllegalStateException(getClass().getSimpleName() + " " + uid + " was closed (its copies and "
                    + "the DataFrames it made keep working)");
        }
        return hold.state();
    }

    /** The columns this model appends with its current params, in order (those whose name is empty left out). */
    abstract List<Output> outputs();

    /** A new model of this type holding {@code state}, with default params (the base of {@link #copy}). */
    abstract M create(String uid, FittedState state);

    /** The param naming the main column this model appends: {@code predictionCol}, or PCA's {@code outputCol}. */
    abstract Param<String> appendedCol();

    /**
     * The rows of {@code dataset} with this model's columns appended, computed in the executors: each partition's
     * rows are scored in blocks ({@link #BLOCK_ROWS} rows at most, fewer when the features of that many rows would
     * pass {@link #BLOCK_BYTES}), each block one matrix on the executor's device, one call of the model per output
     * column, and a partition of no rows never fetches the model. The result is a {@code mapPartitions} of the rows
     * (as XGBoost4J-Spark's and spark-rapids-ml's transforms are), so Catalyst cannot look into it: a query over the
     * result scores every row it reads, even one that reads none of the model's columns, and filters and column
     * pruning stop at it (select and filter the rows before {@code transform}). Nothing runs until an action does;
     * streaming {@code DataFrame}s work as batch ones. The result's schema is {@link #transformSchema}'s. Its plan
     * holds the fitted state until the result is gone (see the class comment).
     *
     * @throws IllegalStateException if this model was closed
     */
    @Override
    public Dataset<Row> transform(Dataset<?> dataset) {
        StructType schema = transformSchema(dataset.schema());
        List<Output> outputs = outputs();
        if (outputs.isEmpty()) {
            return dataset.toDF();
        }
        FittedState.PlanHandle plan = new FittedState.PlanHandle(state());
        int features = dataset.schema().fieldIndex(featuresColumn());
        // the row encoder drops the fields' metadata (the ML attributes of the appended columns): to(schema) sets it
        return dataset.toDF()
                .mapPartitions(new Scorer(plan, outputs, features), Encoders.row(schema))
                .to(schema);
    }

    /** The column the features are read from. */
    String featuresColumn() {
        return getFeaturesCol();
    }

    /** The most rows of one block that a transform scores in one call of the model. */
    static final int BLOCK_ROWS = 4096;

    /** The most bytes of features (as float64) in one block: wider rows make smaller blocks, of one row at least. */
    static final long BLOCK_BYTES = 8L << 20;

    /** The rows of a block whose rows have {@code width} features each. */
    static int blockRows(int width) {
        return (int) Math.max(1, Math.min(BLOCK_ROWS, BLOCK_BYTES / (Double.BYTES * Math.max(1L, width))));
    }

    /**
     * In an executor: a partition's rows with the model's columns appended, scored a block at a time.
     *
     * @param plan the fitted state's handle (the plan holds it through this function)
     * @param outputs the columns appended
     * @param features the index of the features column in the rows
     */
    private record Scorer(FittedState.PlanHandle plan, List<Output> outputs, int features)
            implements MapPartitionsFunction<Row, Row> {
        @Override
        public Iterator<Row> call(Iterator<Row> rows) {
            return new Blocks(rows, plan.ref(), outputs, features);
        }
    }

    /**
     * The scored rows of one partition, read and scored a block at a time as they are asked for. A block ends at
     * {@link #blockRows} rows, at the partition's end, or before a row of another number of features than the
     * block's (that row starts the next block, whose model call says what is wrong with it). Not thread-safe.
     */
    private static final class Blocks implements Iterator<Row> {
        private final Iterator<Row> in;
        private final ModelRef<Estimator> ref;
        private final List<Output> outputs;
        private final int features;
        /** The rows of the current block. */
        private final List<Row> block = new ArrayList<>();
        /** The current block's appended values: by output, then by row. */
        private Object[][] values = new Object[0][];
        /** The row of the block to hand out next. */
        private int next;
        /** A row read that starts the next block (its features differ in number from the block's); null if none. */
        private Row pending;
        /** The features of {@link #pending}. */
        private double[] pendingX;

        Blocks(Iterator<Row> in, ModelRef<Estimator> ref, List<Output> outputs, int features) {
            this.in = in;
            this.ref = ref;
            this.outputs = outputs;
            this.features = features;
        }

        @Override
        public boolean hasNext() {
            if (next < block.size()) {
                return true;
            }
            score();
            return next < block.size();
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            Row r = block.get(next);
            Object[] out = new Object[r.size() + values.length];
            for (int i = 0; i < r.size(); i++) {
                out[i] = r.get(i);
            }
            for (int c = 0; c < values.length; c++) {
                out[r.size() + c] = values[c][next];
            }
            next++;
            return RowFactory.create(out);
        }

        /** Reads the next block of rows and scores it; an empty block when the partition has no more rows. */
        private void score() {
            block.clear();
            next = 0;
            List<double[]> x = new ArrayList<>();
            if (pending != null) {
                block.add(pending);
                x.add(pendingX);
                pending = null;
                pendingX = null;
            }
            int limit = x.isEmpty() ? 1 : blockRows(x.getFirst().length);
            while (x.size() < limit && in.hasNext()) {
                Row r = in.next();
                double[] v = features(r.get(features));
                if (x.isEmpty()) {
                    limit = blockRows(v.length);
                } else if (v.length != x.getFirst().length) {
                    pending = r;
                    pendingX = v;
                    break;
                }
                block.add(r);
                x.add(v);
            }
            if (block.isEmpty()) {
                return;
            }
            Node node = Node.current();
            try (NdArray input = NdArray.fromMatrix(node.scratchMemory(), x.toArray(new double[0][]))) {
                node.countScoredRows(ComputeBackends.forArray(input), block.size());
                values = ref.apply(m -> {
                    Object[][] v = new Object[outputs.size()][];
                    for (int c = 0; c < v.length; c++) {
                        v[c] = outputs.get(c).scoring().values(m, input);
                    }
                    return v;
                });
            }
        }
    }

    /** The features of one row as the rows hold them: an ml vector, or a Scala sequence of numbers. */
    private static double[] features(Object features) {
        if (features instanceof Vector v) {
            return v.toArray();
        }
        if (features instanceof Seq<?> seq) {
            double[] out = new double[seq.length()];
            for (int j = 0; j < out.length; j++) {
                Object e = seq.apply(j);
                if (!(e instanceof Number n)) {
                    throw new IllegalArgumentException(
                            "features hold " + e + " at " + j + " (expected: numbers, and no null)");
                }
                out[j] = n.doubleValue();
            }
            return out;
        }
        throw new IllegalArgumentException(
                features == null
                        ? "null features (expected: an ml vector or an array of " + "numbers in every row)"
                        : "features of " + features.getClass().getName()
                                + " (expected: an ml vector or an array of numbers)");
    }

    @Override
    public StructType transformSchema(StructType schema) {
        List<StructField> fields = new ArrayList<>();
        for (Output o : outputs()) {
            fields.add(o.field());
        }
        return Schemas.appended(schema, featuresColumn(), fields);
    }

    /**
     * A copy sharing this model's fitted state, with {@code extra}'s params.
     *
     * @throws IllegalStateException if this model was closed
     */
    @Override
    public M copy(ParamMap extra) {
        M copy = copyValues(create(uid, state()), extra);
        copy.setParent(parent());
        copyExtras(copy);
        return copy;
    }

    /** Carries what a copy shares besides the state and the params (a training summary); nothing by default. */
    void copyExtras(M copy) {}

    /**
     * Lets go of the fitted state: released now (the broadcast closed, evicting the executors' copies, and the
     * driver's memory freed) if no copy and no DataFrame holds it any more, else when the last of them lets go.
     * This model cannot be used afterwards; closing twice is harmless.
     */
    @Override
    public void close() {
        hold.close();
    }

    // ---------------------------------------------------------------- executor-side values

    /** The elements of a float or integer array as doubles. */
    static double[] doubles(NdArray p) {
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

    /** The elements of {@code p} (one per row) as boxed doubles; closes {@code p}. */
    static Object[] boxedDoubles(NdArray p) {
        try (p) {
            double[] v = doubles(p);
            Object[] out = new Object[v.length];
            for (int i = 0; i < v.length; i++) {
                out[i] = v[i];
            }
            return out;
        }
    }

    /** The elements of int32 {@code p} (one per row) as boxed integers; closes {@code p}. */
    static Object[] boxedInts(NdArray p) {
        try (p) {
            int[] v = p.toIntArray();
            Object[] out = new Object[v.length];
            for (int i = 0; i < v.length; i++) {
                out[i] = v[i];
            }
            return out;
        }
    }

    /** The rows of matrix {@code p} (n x k) as dense vectors, each scaled by {@code scale}; closes {@code p}. */
    static Object[] rowVectors(NdArray p, double scale) {
        try (p) {
            double[] v = doubles(p);
            int rows = (int) p.dim(0);
            int cols = rows == 0 ? 0 : v.length / rows;
            Object[] out = new Object[rows];
            for (int i = 0; i < rows; i++) {
                double[] row = Arrays.copyOfRange(v, i * cols, (i + 1) * cols);
                if (scale != 1) {
                    for (int j = 0; j < cols; j++) {
                        row[j] *= scale;
                    }
                }
                out[i] = Vectors.dense(row);
            }
            return out;
        }
    }

    // ---------------------------------------------------------------- persistence

    private static final String DATA = "cuwire/model.cuwire";

    @Override
    public MLWriter write() {
        return new Writer(this);
    }

    private static final class Writer extends MLWriter {
        private final CuwireModel<?> model;

        Writer(CuwireModel<?> model) {
            this.model = model;
        }

        @Override
        public void saveImpl(String path) {
            DefaultParamsWriter$.MODULE$.saveMetadata(model, path, sparkSession());
            Node node = Node.current();
            Path file = new Path(path, DATA);
            Estimator fitted = model.estimator();
            try {
                FileSystem fs = fileSystem(file, sc().hadoopConfiguration());
                try (FSDataOutputStream out = fs.create(file, true);
                        Serialized s = node.registry().serialize(fitted, Family.CUDA, Family.HOST)) {
                    FrameStreams.write(s, out, node.hostMemory());
                }
            } catch (IOException e) {
                throw new UncheckedIOException("saving " + fitted + " to " + file, e);
            }
        }
    }

    /**
     * Whether Spark ML saves or loads in local mode ({@code saveToLocal}, {@code loadFromLocal}: Spark Connect's
     * model cache offloading to and reloading from the driver's disk).
     */
    private static boolean localMode() {
        return Boolean.TRUE.equals(
                ReadWriteUtils$.MODULE$.localSavingModeState().get());
    }

    /** The file system of {@code file}: the local one in local mode, else the one its path names. */
    private static FileSystem fileSystem(Path file, Configuration conf) throws IOException {
        return localMode() ? FileSystem.getLocal(conf) : file.getFileSystem(conf);
    }

    /**
     * The reader of saved models of class {@code type}, whose fitted estimator is a {@code fitted}: the model is
     * made with {@code make} and gets the saved params.
     */
    static <M extends CuwireModel<M>> MLReader<M> reader(
            Class<M> type, Class<? extends Estimator> fitted, BiFunction<String, FittedState, M> make) {
        return new Reader<>(type, fitted, make);
    }

    private static final class Reader<M extends CuwireModel<M>> extends MLReader<M> {
        private final Class<M> type;
        private final Class<? extends Estimator> fitted;
        private final BiFunction<String, FittedState, M> make;

        Reader(Class<M> type, Class<? extends Estimator> fitted, BiFunction<String, FittedState, M> make) {
            this.type = type;
            this.fitted = fitted;
            this.make = make;
        }

        @Override
        public M load(String path) {
            DefaultParamsReader.Metadata meta =
                    DefaultParamsReader$.MODULE$.loadMetadata(path, sparkSession(), type.getName());
            Path file = new Path(path, DATA);
            FittedState state;
            try {
                FileSystem fs = fileSystem(file, sc().hadoopConfiguration());
                if (localMode()) {
                    // Connect's cache reloading an offloaded model: device memory is taken when the model is used
                    state = FittedState.lazy(
                            type.getSimpleName() + " reloaded from " + file,
                            fs.getFileStatus(file).getLen(),
                            () -> read(fs, file));
                } else {
                    state = new FittedState(read(fs, file));
                }
            } catch (IOException e) {
                throw new UncheckedIOException("loading a cuwire model from " + file, e);
            }
            M model = make.apply(meta.uid(), state);
            meta.getAndSetParams(model, scala.Option.apply(null));
            return model;
        }

        /** The fitted estimator saved in {@code file}, read into this JVM's device memory. */
        private Estimator read(FileSystem fs, Path file) {
            Node node = Node.current();
            Object value;
            try (FSDataInputStream in = fs.open(file);
                    Serialized s = FrameStreams.read(in, node.frameAllocator(), node.hostMemory(), Limits.DEFAULT)) {
                value = node.registry().deserialize(s, node.target());
            } catch (IOException e) {
                throw new UncheckedIOException("loading a cuwire model from " + file, e);
            }
            if (!fitted.isInstance(value)) {
                if (value instanceof AutoCloseable c) {
                    Closeables.closeAll(List.of(c));
                }
                throw new IllegalArgumentException(
                        file + " holds a " + value.getClass().getSimpleName() + " (expected: a fitted "
                                + fitted.getSimpleName() + ", for " + type.getSimpleName() + ")");
            }
            return fitted.cast(value);
        }
    }
}
