package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.ml.types.MlTypes;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;
import java.util.ServiceLoader;

/**
 * The registry client and workers share: the ml types (estimators also on the {@code java} allow-list), the
 * cluster's control messages and handles, and the types of the {@link TaskProvider}s on the class path.
 */
final class ClusterTypes {
    private ClusterTypes() {}

    /**
     * The family chain of every cluster connection: {@code java} too, since a broadcast may name it
     * ({@code BroadcastOptions.family}) and a connection carries only the families it agreed; the {@code java}
     * family still reads only the allow-listed estimators.
     */
    public static Family[] families() {
        return new Family[] {Family.CUDA, Family.HOST, Family.JAVA};
    }

    /** A new registry holding every type that travels in the cluster. */
    public static TypeRegistry registry() {
        TypeRegistry r =
                Endpoint.registerMessages(MlTypes.allowJava(MlTypes.register(new TypeRegistry())), WorkerRequest.class);
        for (Class<?> type :
                new Class<?>[] {ObjectRef.class, ModelHandle.class, WorkerStats.class, WorkerRequest.Subtree.class}) {
            r.registerGeneric(type, Family.CUDA, Family.HOST);
            r.register(type);
        }
        r.register(ModelFrame.class);
        for (Family f : new Family[] {Family.CUDA, Family.HOST}) {
            r.register(ModelFrame.class, f, new ModelFrame.FrameSerializer());
        }
        for (TaskProvider p : ServiceLoader.load(TaskProvider.class, ClusterTypes.class.getClassLoader())) {
            p.registerTypes(r);
        }
        return r;
    }
}
