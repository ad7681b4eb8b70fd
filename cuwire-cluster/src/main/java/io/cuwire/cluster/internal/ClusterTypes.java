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
