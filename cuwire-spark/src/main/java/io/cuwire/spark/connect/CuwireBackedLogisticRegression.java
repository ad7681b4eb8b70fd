package io.cuwire.spark.connect;

import io.cuwire.spark.ml.CuwireLogisticRegression;
import io.cuwire.spark.ml.CuwireLogisticRegressionModel;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.classification.LogisticRegressionModel;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.sql.Dataset;

/**
 * Spark's {@code LogisticRegression}, fitted by {@link CuwireLogisticRegression} (L-BFGS with the same
 * {@code maxIter} and {@code tol}) where the params agree (see {@link CuwireMlBackend}): the coefficient matrix and
 * intercepts come back as Spark's {@code LogisticRegressionModel}, binomial for two classes and multinomial for more
 * (as {@code family=auto}); {@code threshold}, {@code thresholds} and the output columns are the model's, as in Spark.
 */
public class CuwireBackedLogisticRegression extends LogisticRegression {
    /** A stage with a fresh uid. */
    public CuwireBackedLogisticRegression() {
        this(Identifiable.randomUID("logreg"));
    }

    /** A stage with {@code uid} (Spark Connect, copy and load use it). */
    public CuwireBackedLogisticRegression(String uid) {
        super(uid);
    }

    /** Why cuwire cannot fit these params (empty: it can). */
    Agreement agreement() {
        return new Agreement(this)
                .unweighted(weightCol())
                .unless(
                        !getFamily().equals("multinomial"),
                        "family is multinomial (cuwire fits one coefficient row " + "for two classes, as family=auto)")
                .unless(
                        !usingBoundConstrainedOptimization(),
                        "bounds on coefficients or intercepts are set (cuwire's " + "fit is unconstrained)")
                .l2Unstandardized(getElasticNetParam(), getRegParam(), getStandardization());
    }

    @Override
    public LogisticRegressionModel train(Dataset<?> dataset) {
        if (!agreement().onCuwire()) {
            return super.train(dataset);
        }
        CuwireLogisticRegression cuwire = new CuwireLogisticRegression(uid())
                .setFitIntercept(getFitIntercept())
                .setRegParam(getRegParam())
                .setStandardization(getStandardization())
                .setMaxIter(getMaxIter())
                .setTol(getTol())
                .setFeaturesCol(getFeaturesCol())
                .setLabelCol(getLabelCol());
        try (CuwireLogisticRegressionModel m = cuwire.fit(dataset)) {
            if (getFamily().equals("binomial") && m.numClasses() > 2) {
                throw new IllegalArgumentException("requirement failed: Binomial family only supports 1 or 2 "
                        + "outcome classes but found " + m.numClasses() + ".");
            }
            return new LogisticRegressionModel(
                    uid(), m.coefficientMatrix(), m.interceptVector(), m.numClasses(), m.isMultinomial());
        }
    }
}
