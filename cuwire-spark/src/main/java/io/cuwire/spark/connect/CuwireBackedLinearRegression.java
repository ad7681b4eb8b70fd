package io.cuwire.spark.connect;

import io.cuwire.spark.ml.CuwireLinearRegression;
import io.cuwire.spark.ml.CuwireLinearRegressionModel;
import org.apache.spark.ml.regression.LinearRegression;
import org.apache.spark.ml.regression.LinearRegressionModel;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.sql.Dataset;

/**
 * Spark's {@code LinearRegression}, fitted by {@link CuwireLinearRegression} where the params agree (see
 * {@link CuwireMlBackend}): the fit's coefficients and intercept come back as Spark's {@code LinearRegressionModel}.
 * {@code maxIter}, {@code tol}, {@code solver}, {@code aggregationDepth} and {@code maxBlockSizeInMB} steer Spark's
 * iterative solver only: cuwire solves the normal equations exactly.
 */
public class CuwireBackedLinearRegression extends LinearRegression {
    /** A stage with a fresh uid. */
    public CuwireBackedLinearRegression() {
        this(Identifiable.randomUID("linReg"));
    }

    /** A stage with {@code uid} (Spark Connect, copy and load use it). */
    public CuwireBackedLinearRegression(String uid) {
        super(uid);
    }

    /** Why cuwire cannot fit these params (empty: it can). */
    Agreement agreement() {
        return new Agreement(this)
                .unweighted(weightCol())
                .unless(getLoss().equals("squaredError"), "loss is " + getLoss() + " (cuwire fits least squares)")
                .l2Unstandardized(getElasticNetParam(), getRegParam(), getStandardization());
    }

    @Override
    public LinearRegressionModel train(Dataset<?> dataset) {
        if (!agreement().onCuwire()) {
            return super.train(dataset);
        }
        CuwireLinearRegression cuwire = new CuwireLinearRegression(uid())
                .setFitIntercept(getFitIntercept())
                .setRegParam(getRegParam())
                .setStandardization(getStandardization())
                .setFeaturesCol(getFeaturesCol())
                .setLabelCol(getLabelCol());
        try (CuwireLinearRegressionModel m = cuwire.fit(dataset)) {
            return new LinearRegressionModel(uid(), m.coefficients(), m.intercept());
        }
    }
}
