package io.cuwire.spark.connect;

import io.cuwire.ml.ForestLayout;
import io.cuwire.spark.ml.CuwireRandomForestClassificationModel;
import io.cuwire.spark.ml.CuwireRandomForestClassifier;
import java.util.List;
import org.apache.spark.ml.classification.DecisionTreeClassificationModel;
import org.apache.spark.ml.classification.RandomForestClassificationModel;
import org.apache.spark.ml.classification.RandomForestClassifier;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.sql.Dataset;

/**
 * Spark's {@code RandomForestClassifier}, grown by {@link CuwireRandomForestClassifier} (the same {@code numTrees},
 * {@code maxDepth}, {@code minInstancesPerNode}, {@code featureSubsetStrategy}, {@code bootstrap}, {@code seed} and
 * {@code maxBins}) where the params agree (see {@link CuwireMlBackend}): the trees come back as Spark's
 * {@code RandomForestClassificationModel} of {@code DecisionTreeClassificationModel}s, whose predictions are those of
 * cuwire's forest (see {@link SparkTrees} for what the nodes carry). cuwire's trees split on Gini impurity:
 * {@code impurity=entropy} runs on Spark's implementation.
 */
public class CuwireBackedRandomForestClassifier extends RandomForestClassifier {
    /** A stage with a fresh uid. */
    public CuwireBackedRandomForestClassifier() {
        this(Identifiable.randomUID("rfc"));
    }

    /** A stage with {@code uid} (Spark Connect, copy and load use it). */
    public CuwireBackedRandomForestClassifier(String uid) {
        super(uid);
    }

    /** Why cuwire cannot fit these params on {@code dataset} (empty: it can). */
    Agreement agreement(Dataset<?> dataset) {
        return SparkTrees.forest(
                new Agreement(this)
                        .unless(
                                getImpurity().equalsIgnoreCase("gini"),
                                "impurity is " + getImpurity() + " (cuwire's trees split on Gini impurity)"),
                this,
                dataset);
    }

    @Override
    public RandomForestClassificationModel train(Dataset<?> dataset) {
        if (!agreement(dataset).onCuwire()) {
            return super.train(dataset);
        }
        int classes = getNumClasses(dataset, getNumClasses$default$2());
        CuwireRandomForestClassifier cuwire = SparkTrees.grownAs(new CuwireRandomForestClassifier(uid()), this)
                .setNClasses(classes);
        try (CuwireRandomForestClassificationModel m = cuwire.fit(dataset)) {
            List<ForestLayout.Tree> trees = SparkTrees.trees(m.estimator());
            int features = m.numFeatures();
            DecisionTreeClassificationModel[] spark = new DecisionTreeClassificationModel[trees.size()];
            for (int t = 0; t < spark.length; t++) {
                spark[t] = copyValues(
                        new DecisionTreeClassificationModel(
                                Identifiable.randomUID("dtc"),
                                SparkTrees.root(trees.get(t), classes),
                                features,
                                classes),
                        extractParamMap());
            }
            RandomForestClassificationModel model =
                    new RandomForestClassificationModel(uid(), spark, features, classes);
            return copyValues(model.setParent(this), extractParamMap());
        }
    }
}
