package io.cuwire.spark.connect;

import io.cuwire.spark.ml.CuwirePCA;
import io.cuwire.spark.ml.CuwirePCAModel;
import org.apache.spark.ml.feature.PCA;
import org.apache.spark.ml.feature.PCAModel;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.sql.Dataset;

/**
 * Spark's {@code PCA}, fitted by {@link CuwirePCA} (see {@link CuwireMlBackend}; its params, {@code k},
 * {@code inputCol} and {@code outputCol}, always agree): the components and explained variances come back as Spark's
 * {@code PCAModel}, which projects rows without centering them, as Spark's does. A component's sign may differ from
 * Spark's fit (either is a principal component).
 */
public class CuwireBackedPCA extends PCA {
    /** A stage with a fresh uid. */
    public CuwireBackedPCA() {
        this(Identifiable.randomUID("pca"));
    }

    /** A stage with {@code uid} (Spark Connect, copy and load use it). */
    public CuwireBackedPCA(String uid) {
        super(uid);
    }

    @Override
    public PCAModel fit(Dataset<?> dataset) {
        transformSchema(dataset.schema(), true);
        CuwirePCA cuwire = new CuwirePCA(uid())
                .setK(getK())
                .setInputCol(getInputCol())
                .setOutputCol(getOutputCol())
                .setCenter(false);
        try (CuwirePCAModel m = cuwire.fit(dataset)) {
            PCAModel model = new PCAModel(uid(), m.pc(), m.explainedVariance());
            return copyValues(model.setParent(this), extractParamMap());
        }
    }
}
