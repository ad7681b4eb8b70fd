package io.cuwire.spark.ml;

import io.cuwire.memory.DType;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.modelfile.ModelFile;
import io.cuwire.ml.modelfile.ModelFileException;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.spark.internal.Node;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.sql.SparkSession;

/**
 * Spark ML models from model files ({@code docs/model-file.md}): a scikit-learn estimator that
 * {@code cuwire_sklearn.save} wrote, or one {@link ModelFile#write} wrote, becomes the {@code Cuwire*Model} that the
 * matching stage's {@code fit} returns — the same class, the same columns and params, the same transform (the
 * estimator broadcast once, each executor computing the columns on its own device).
 *
 * <table>
 * <caption>the model each estimator of a file becomes</caption>
 * <tr><th>file's estimator</th><th>model</th></tr>
 * <tr><td>LinearRegression, Ridge</td><td>{@link CuwireLinearRegressionModel}</td></tr>
 * <tr><td>LogisticRegression</td><td>{@link CuwireLogisticRegressionModel}</td></tr>
 * <tr><td>KMeans</td><td>{@link CuwireKMeansModel}</td></tr>
 * <tr><td>PCA</td><td>{@link CuwirePCAModel}, {@code center} set (scikit-learn's transform subtracts the mean)</td>
 * </tr>
 * <tr><td>MultinomialNB</td><td>{@link CuwireMultinomialNBModel}</td></tr>
 * <tr><td>KNeighborsClassifier</td><td>{@link CuwireKNeighborsClassificationModel}</td></tr>
 * <tr><td>RandomForestClassifier</td><td>{@link CuwireRandomForestClassificationModel}</td></tr>
 * <tr><td>RandomForestRegressor</td><td>{@link CuwireRandomForestRegressionModel}</td></tr>
 * </table>
 *
 * <p>Labels are class indices: label {@code i} is the file's {@code classes_[i]}. A model made here has no parent
 * stage and no training summary; it is saved, copied and closed as a fitted one.
 */
public final class CuwireModels {
    private CuwireModels() {}

    /**
     * The model of the model file at {@code path} (any Hadoop file system: a local path, {@code file:}, {@code hdfs:},
     * …), its arrays read into the driver's device memory as float64.
     *
     * @throws ModelFileException naming the field, for a file that is not a model file or whose content cuwire
     *     refuses (see {@link ModelFile#read} and {@link ModelFile#toEstimator})
     * @throws UncheckedIOException if the file cannot be read
     */
    public static CuwireModel<?> fromModelFile(String path) {
        return fromModelFile(path, DType.FLOAT64);
    }

    /**
     * The model of the model file at {@code path}, of class {@code type}.
     *
     * @throws ModelFileException naming the estimator, if the file holds one that is not a {@code type}
     */
    public static <M extends CuwireModel<M>> M fromModelFile(String path, Class<M> type) {
        CuwireModel<?> m = fromModelFile(path);
        if (!type.isInstance(m)) {
            String problem = m.estimator().getClass().getSimpleName() + " in " + path + ", a "
                    + m.getClass().getSimpleName() + " (expected: a " + type.getSimpleName() + ")";
            m.close();
            throw new ModelFileException("estimator", problem);
        }
        return type.cast(m);
    }

    /**
     * The model of the model file at {@code path}, its arrays read into the driver's device memory as {@code dtype}
     * (float32 or float64).
     */
    public static CuwireModel<?> fromModelFile(String path, DType dtype) {
        ModelFile file = read(path);
        return of(file.toEstimator(Node.current().deviceMemory(), dtype));
    }

    /** A model holding {@code fitted}, which it owns from now on (closed here if no model takes it). */
    private static CuwireModel<?> of(Estimator fitted) {
        try {
            String uid =
                    Identifiable.randomUID("cuwireImported" + fitted.getClass().getSimpleName());
            FittedState state = new FittedState(fitted);
            return switch (fitted) {
                case LinearModel m -> new CuwireLinearRegressionModel(uid, state);
                case LogisticRegression m -> new CuwireLogisticRegressionModel(uid, state);
                case KMeans m -> new CuwireKMeansModel(uid, state);
                case PCA m -> new CuwirePCAModel(uid, state).setCenter(true);
                case MultinomialNB m -> new CuwireMultinomialNBModel(uid, state);
                case KNeighborsClassifier m -> new CuwireKNeighborsClassificationModel(uid, state);
                case RandomForestClassifier m -> new CuwireRandomForestClassificationModel(uid, state);
                case RandomForestRegressor m -> new CuwireRandomForestRegressionModel(uid, state);
                default ->
                    throw new IllegalArgumentException(
                            fitted.getClass().getSimpleName() + " has no Spark model (expected one of: "
                                    + String.join(", ", ModelFile.estimators()) + ")");
            };
        } catch (RuntimeException | Error e) {
            fitted.close();
            throw e;
        }
    }

    /**
     * The model file at {@code path}: read in place on the local file system, else copied to a local temporary file
     * first (after checking its length against {@link ModelFile#DEFAULT_MAX_BYTES}) and read from there.
     */
    private static ModelFile read(String path) {
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
        try {
            FileSystem fs = p.getFileSystem(SparkSession.active().sparkContext().hadoopConfiguration());
            if (fs instanceof LocalFileSystem local) {
                return ModelFile.read(local.pathToFile(p).toPath());
            }
            long length = fs.getFileStatus(p).getLen();
            if (length > ModelFile.DEFAULT_MAX_BYTES) {
                throw new ModelFileException(
                        "file",
                        length + " bytes at " + path + " (expected: at most " + ModelFile.DEFAULT_MAX_BYTES
                                + ", the reader's limit)");
            }
            Path copy = Files.createTempFile("cuwire-model-", ".cwm");
            try {
                fs.copyToLocalFile(false, p, new org.apache.hadoop.fs.Path(copy.toUri()), true);
                return ModelFile.read(copy);
            } finally {
                Files.deleteIfExists(copy);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading the model file " + path, e);
        }
    }
}
