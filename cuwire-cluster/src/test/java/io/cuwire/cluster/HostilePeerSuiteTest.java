package io.cuwire.cluster;

import java.util.List;

/** The hostile-peer suite ({@link HostilePeerSuite}) in the cluster-worker role, over TCP and CUDA IPC. */
class HostilePeerSuiteTest extends HostilePeerSuite {
    @Override
    protected List<String> schemes() {
        return List.of("tcp", "ipc");
    }

    @Override
    protected HostileTarget start(String scheme) throws Exception {
        return HostileWorker.start(scheme, System.out);
    }
}
