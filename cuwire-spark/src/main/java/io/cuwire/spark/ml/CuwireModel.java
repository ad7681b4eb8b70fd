package io.cuwire.spark.ml;

import io.cuwire.cluster.MlTasks;
import io.cuwire.cluster.TaskRegistry;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.ModelBroadcast;
import io.cuwire.spark.ModelRef;
import io.cuwire.spark.internal.FrameStreams;
import io.cuwire.spark.internal.Node;
import io.cuwire.spark.internal.SparkPartitions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.ml.Model;
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
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A fitted cuwire estimator as a Spark ML model. The fitted state lives in the driver's device memory;
 * {@link #transform} broadcasts it once as a handle ({@link CuwireSpark#broadcast}) and predicts in the executors,
 * each executor JVM fetching the frames once. {@link #close()} releases the broadcast (evicting the executors'
 * copies) and the fitted state. Saved with Spark ML persistence: the params as Spark's JSON metadata, the fitted
 * estimator as a cuwire header plus frames in {@code cuwire/model.cuwire} (long offsets: models over 2 GiB work).
 */
public final class CuwireModel extends Model<CuwireModel> implements MLWritable, AutoCloseable {
    private static final int BATCH_ROWS = 8192;
    private static final TaskRegistry TASKS = TaskRegistry.standard();

    private final String uid;
    private final Param<String> featuresCol;
    private final Param<String> predictionCol;
    private final Estimator fitted;
    private ModelBroadcast<Estimator> broadcast;

    /** A model of the fitted cuwire estimator {@code fitted}, which it owns from now on. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireModel(String uid, Estimator fitted) {
        this.uid = uid;
        this.fitted = fitted;
        this.featuresCol = new Param<>(this, "featuresCol", "features column: ml vectors or arrays of numbers");
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column");
        setDefault(featuresCol, "features");
        setDefault(predictionCol, "prediction");
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

    public String getFeaturesCol() {
        return getOrDefault(featuresCol);
    }

    public String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public CuwireModel setFeaturesCol(String value) {
        set(featuresCol, value);
        return this;
    }

    public CuwireModel setPredictionCol(String value) {
        set(predictionCol, value);
        return this;
    }

    /** The fitted cuwire estimator, in the driver's memory (owned by this model: do not close it). */
    public Estimator estimator() {
        return fitted;
    }

    /** The handle tasks use, broadcasting the model on first call. */
    public synchronized ModelRef<Estimator> ref() {
        if (broadcast == null || broadcast.isReleased()) {
            broadcast = CuwireSpark.broadcast(fitted);
        }
        return broadcast.ref();
    }

    @Override
    public Dataset<Row> transform(Dataset<?> dataset) {
        StructType out = transformSchema(dataset.schema());
        ModelRef<Estimator> ref = ref();
        int features = dataset.schema().fieldIndex(getFeaturesCol());
        JavaRDD<Row> rows = dataset.toDF().javaRDD().mapPartitions(it -> predict(ref, features, it));
        return dataset.sparkSession().createDataFrame(rows, out);
    }

    /** In an executor: the rows with their predictions appended, a batch of rows at a time. */
    private static Iterator<Row> predict(ModelRef<Estimator> ref, int features, Iterator<Row> rows) {
        List<Row> out = new ArrayList<>();
        List<Row> batch = new ArrayList<>();
        while (rows.hasNext()) {
            batch.add(rows.next());
            if (batch.size() == BATCH_ROWS || !rows.hasNext()) {
                double[] predictions = predictBatch(ref, features, batch);
                for (int i = 0; i < batch.size(); i++) {
                    Row r = batch.get(i);
                    Object[] values = new Object[r.length() + 1];
                    for (int j = 0; j < r.length(); j++) {
                        values[j] = r.get(j);
                    }
                    values[r.length()] = predictions[i];
                    out.add(RowFactory.create(values));
                }
                batch.clear();
            }
        }
        return out.iterator();
    }

    private static double[] predictBatch(ModelRef<Estimator> ref, int features, List<Row> batch) {
        Node node = Node.current();
        double[][] x = new double[batch.size()][];
        for (int i = 0; i < x.length; i++) {
            x[i] = SparkPartitions.features(batch.get(i), features);
        }
        try (NdArray input = NdArray.fromMatrix(node.deviceMemory(), x)) {
            io.cuwire.cluster.TaskContext ctx = new io.cuwire.cluster.TaskContext(0, node.device().ordinal(),
                    node.deviceMemory(), node.hostMemory());
            try (NdArray p = ref.apply(m -> (NdArray) TASKS.get(MlTasks.PREDICT.name()).run(ctx, List.of(m, input)))) {
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
                    case INT32 -> java.util.Arrays.stream(p.toIntArray()).asDoubleStream().toArray();
                    default -> java.util.Arrays.stream(p.toLongArray()).asDoubleStream().toArray();
                };
            }
        }
    }

    /** {@code schema} with a double column {@code prediction}, after checking that {@code features} is there. */
    static StructType withPrediction(StructType schema, String features, String prediction) {
        schema.fieldIndex(features);
        if (List.of(schema.fieldNames()).contains(prediction)) {
            throw new IllegalArgumentException("column '" + prediction + "' exists already in " + schema);
        }
        return schema.add(prediction, DataTypes.DoubleType, false);
    }

    @Override
    public StructType transformSchema(StructType schema) {
        return withPrediction(schema, getFeaturesCol(), getPredictionCol());
    }

    @Override
    public CuwireModel copy(ParamMap extra) {
        CuwireModel copy = copyValues(new CuwireModel(uid, fitted), extra);
        return copy.setParent(parent());
    }

    /** Releases the broadcast (evicting the executors' copies) and the fitted state. Closing twice is harmless. */
    @Override
    public synchronized void close() {
        if (broadcast != null) {
            broadcast.close();
        }
        fitted.close();
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
                        Serialized s = node.registry().serialize(model.fitted, Family.CUDA, Family.HOST)) {
                    FrameStreams.write(s, out, node.hostMemory());
                }
            } catch (IOException e) {
                throw new UncheckedIOException("saving " + model.fitted + " to " + file, e);
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
