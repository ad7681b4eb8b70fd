package io.cuwire.cluster.internal;

import io.cuwire.cluster.ModelHandle;
import io.cuwire.cluster.ObjectRef;
import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.ml.MlTypes;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;

/**
 * The registry client and workers share: the ml types (estimators also on the {@code java} allow-list) plus the
 * cluster's control messages and handles.
 */
public final class ClusterTypes {
    private ClusterTypes() {
    }

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
        TypeRegistry r = Endpoint.registerMessages(MlTypes.allowJava(MlTypes.register(new TypeRegistry())));
        for (Class<?> type : new Class<?>[] {ObjectRef.class, ModelHandle.class}) {
            r.registerGeneric(type, Family.CUDA, Family.HOST);
            r.register(type);
        }
        return r;
    }
}
