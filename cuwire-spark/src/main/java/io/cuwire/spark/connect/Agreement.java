package io.cuwire.spark.connect;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.Params;

/**
 * Whether a Spark estimator's params agree with what cuwire's estimator computes: the reasons they do not, each a
 * sentence naming the param. A stage that disagrees runs Spark's own implementation, and says why in the log once per
 * stage class and reason ({@link #fallBack}).
 */
final class Agreement {
    private static final System.Logger LOG = System.getLogger(CuwireMlBackend.class.getName());
    /** How often each "stage: reason" was logged (once), since the JVM started: for tests. */
    private static final Map<String, AtomicInteger> LOGGED = new ConcurrentHashMap<>();

    private final Params stage;
    private final List<String> reasons = new ArrayList<>();

    /** The agreement of {@code stage}'s params, no reason yet. */
    Agreement(Params stage) {
        this.stage = stage;
    }

    /** Adds {@code reason} when {@code disagrees}. */
    Agreement unless(boolean agrees, String reason) {
        if (!agrees) {
            reasons.add(reason);
        }
        return this;
    }

    /** Adds a reason when {@code column} (a column param such as {@code weightCol}) names a column. */
    Agreement noColumn(Param<String> column, String reason) {
        return unless(!stage.isDefined(column) || stage.getOrDefault(column).isEmpty(), reason);
    }

    /** Adds a reason when {@code weightCol} names a column: cuwire's fits take no row weights. */
    Agreement unweighted(Param<String> weightCol) {
        return noColumn(weightCol, "weightCol is set (cuwire fits unweighted rows)");
    }

    /**
     * Adds the reasons a linear model's penalty is not cuwire's: an L1 share, or an L2 penalty on standardized
     * coefficients.
     */
    Agreement l2Unstandardized(double elasticNetParam, double regParam, boolean standardization) {
        return unless(elasticNetParam == 0, "elasticNetParam is " + elasticNetParam + " (cuwire has no L1 penalty)")
                .unless(
                        regParam == 0 || !standardization,
                        "regParam > 0 with standardization=true (cuwire " + "penalizes the coefficients as they are)");
    }

    /** Adds a reason when {@code param} was set (its default is what cuwire does). */
    Agreement notSet(Param<?> param, String reason) {
        return unless(!stage.isSet(param), reason);
    }

    /** The reasons the params disagree; empty when cuwire computes what Spark would. */
    List<String> reasons() {
        return List.copyOf(reasons);
    }

    /**
     * Whether cuwire fits this stage: the params agree. When not, the reasons are logged, each once per stage class
     * for the life of the JVM, and the caller runs Spark's implementation.
     */
    boolean onCuwire() {
        if (reasons.isEmpty()) {
            return true;
        }
        fallBack(stage.getClass().getSuperclass().getName(), String.join("; ", reasons));
        return false;
    }

    /** Logs, once for each {@code stage} and {@code reason}, that {@code stage} runs on Spark's own implementation. */
    private static void fallBack(String stage, String reason) {
        AtomicInteger n = LOGGED.computeIfAbsent(stage + ": " + reason, k -> new AtomicInteger());
        if (n.getAndIncrement() == 0) {
            LOG.log(System.Logger.Level.WARNING, "cuwire: {0} runs on Spark''s own implementation: {1}", stage, reason);
        }
    }

    /** The reasons logged so far, "stage: reason", with how many fits gave each (each was logged once). */
    static Map<String, Integer> logged() {
        Map<String, Integer> out = new java.util.TreeMap<>();
        LOGGED.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }
}
