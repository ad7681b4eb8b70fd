package io.cuwire.ml.types;

import io.cuwire.ml.Estimator;
import io.cuwire.ml.Partial;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.decomposition.PcaStats;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LinearStats;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;
import java.lang.reflect.Field;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Registers the estimators and their partial statistics with a {@link TypeRegistry}: the generic field-walking
 * serializer once for {@link Estimator} and once for {@link Partial}, in the {@code cuda} and {@code host}
 * families, and every concrete type under its stable {@link io.cuwire.serialize.WireType} name. The fitted forests'
 * opaque blobs use the registry's own {@link io.cuwire.serialize.OpaqueBlob} serializer.
 */
public final class MlTypes {
    /** Every estimator and partial type, in registration order. */
    public static final List<Class<?>> TYPES = List.of(
            LinearRegression.class,
            Ridge.class,
            LinearStats.class,
            KMeans.class,
            KMeans.Step.class,
            KMeans.Candidates.class,
            PCA.class,
            PcaStats.class,
            LogisticRegression.class,
            LogisticRegression.Gradient.class,
            MultinomialNB.class,
            MultinomialNB.Counts.class,
            NearestNeighbors.class,
            KNeighborsClassifier.class,
            KNeighborsClassifier.Rows.class,
            Neighbors.class,
            RandomForestClassifier.class,
            RandomForestRegressor.class);

    private MlTypes() {}

    /**
     * Puts every estimator on {@code registry}'s {@code java} allow-list, with the classes its JDK serial form names
     * (its superclasses up to {@link Estimator}, the enums of its parameters), so that the {@code java} family can
     * carry estimators; returns {@code registry}. Partial statistics stay off it.
     */
    public static TypeRegistry allowJava(TypeRegistry registry) {
        Set<Class<?>> allowed = new LinkedHashSet<>();
        for (Class<?> type : TYPES) {
            if (!Estimator.class.isAssignableFrom(type)) {
                continue;
            }
            for (Class<?> c = type; c != Object.class; c = c.getSuperclass()) {
                allowed.add(c);
                for (Field f : c.getDeclaredFields()) {
                    if (f.getType().isEnum()) {
                        allowed.add(f.getType());
                    }
                }
            }
        }
        return registry.allowJava(allowed.toArray(Class<?>[]::new));
    }

    /** Registers the types; returns {@code registry}. */
    public static TypeRegistry register(TypeRegistry registry) {
        registry.registerGeneric(Estimator.class, Family.CUDA, Family.HOST);
        registry.registerGeneric(Partial.class, Family.CUDA, Family.HOST);
        for (Class<?> type : TYPES) {
            registry.register(type);
        }
        return registry;
    }
}
