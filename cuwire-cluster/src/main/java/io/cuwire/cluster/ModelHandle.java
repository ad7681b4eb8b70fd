package io.cuwire.cluster;

import io.cuwire.serialize.WireType;

/**
 * A model broadcast to the workers ({@link Client#broadcast}): its identity and version. As a task argument it is
 * resolved from the worker's model cache, where the model is kept by {@code (id, version)}. The client gives each
 * model object one id for its lifetime; the version goes up whenever the model's serialized form changed since the
 * last broadcast (a refit replaces its fitted arrays).
 *
 * @param id the model's identity, one per model object of a client
 * @param version the model's version, from 1
 */
@WireType("cuwire.cluster.ModelHandle")
public record ModelHandle(long id, long version) {
    @Override
    public String toString() {
        return "model " + id + " v" + version;
    }
}
