package io.cuwire.spark.connect;

import io.cuwire.ml.ForestLayout;
import io.cuwire.spark.ml.CuwireRandomForestRegressionModel;
import io.cuwire.spark.ml.CuwireRandomForestRegressor;
import java.util.List;
import org.apache.spark.ml.regression.DecisionTreeRegressionModel;
import org.apache.spark.ml.regression.RandomForestRegressionModel;
import org.apache.spark.ml.regression.RandomForestRegressor;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.sql.Dataset;

/**
 * Spark's {@code RandomForestRegressor}, grown by {@link CuwireRandomForestRegressor} (the same {@code numTrees},
 * {@code maxDepth}, {@code minInstancesPerNode}, {@code featureSubsetStrategy}, {@code bootstrap}, {@code seed} and
 * {@code maxBins}; squared error, Spark's only {@code impurity}, {@code variance}) where the params agree (see
 * {@link CuwireMlBackend}): the trees come back as Spark's {@code RandomForestRegressionModel} of
 * {@code DecisionTreeRegressionModel}s, whose predictions are those of cuwire's forest (see {@link SparkTrees} for
 * what the nodes carry).
 */
public class CuwireBackedRandomForestRegressor extends RandomForestRegressor {
    /** A stage with a fresh uid. */
    public CuwireBackedRandomForestRegressor() {
        this(Identifiable.randomUID("rfr"));
    }

    /** A stage with {@code uid} (Spark Connect, copy and load use it). */
    public CuwireBackedRandomForestRegressor(String uid) {
        super(uid);
    }

    /** Why cuwire cannot fit these params on {@code dataset} (empty: it can). */
    Agreement agreement(Dataset<?> dataset) {
        return SparkTrees.forest(new Agreement(this), this, dataset);
    }

    @Override
    public RandomForestRegressionModel train(Dataset<?> dataset) {
        if (!agreement(dataset).onCuwire()) {
            return super.train(dataset);
        }
        CuwireRandomForestRegressor cuwire = SparkTrees.grownAs(new CuwireRandomForestRegressor(uid()), this);
        try (CuwireRandomForestRegressionModel m = cuwire.fit(dataset)) {
            List<ForestLayout.Tree> trees = SparkTrees.trees(m.estimator());
            int features = m.numFeatures();
            DecisionTreeRegressionModel[] spark = new DecisionTreeRegressionModel[trees.size()];
            for (int t = 0; t < spark.length; t++) {
                spark[t] = copyValues(
                        new DecisionTreeRegressionModel(
                                Identifiable.randomUID("dtr"), SparkTrees.root(trees.get(t), 0), features),
                        extractParamMap());
            }
            RandomForestRegressionModel model = new RandomForestRegressionModel(uid(), spark, features);
            return copyValues(model.setParent(this), extractParamMap());
        }
    }
}
