package io.cuwire.spark.internal;

import io.cuwire.cluster.HostilePeerSuite;
import io.cuwire.cluster.HostileTarget;
import java.util.List;

/**
 * The hostile-peer suite ({@link HostilePeerSuite}, cuwire-cluster's, unchanged) in the Spark-executor role
 * ({@link HostileExecutor}), over TCP: the executor's endpoint listens on TCP only.
 */
class HostileExecutorSuiteTest extends HostilePeerSuite {
    @Override
    protected List<String> schemes() {
        return List.of("tcp");
    }

    @Override
    protected HostileTarget start(String scheme) throws Exception {
        return HostileExecutor.start(System.out);
    }
}
