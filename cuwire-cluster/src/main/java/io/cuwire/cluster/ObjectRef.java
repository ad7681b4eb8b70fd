package io.cuwire.cluster;

import io.cuwire.serialize.WireType;

/**
 * A value held in one worker's object store: a data partition from {@link Client#scatter} or a task's result from
 * {@link Client#submit}. Passed as a task argument, it is resolved on the worker that runs the task — from its own
 * store, or fetched from the worker that holds it (worker to worker, not through the client). The value lives until
 * {@link Client#free}.
 *
 * @param worker the index of the worker holding the value
 * @param id the value's number in that worker's store
 */
@WireType("cuwire.cluster.ObjectRef")
public record ObjectRef(int worker, long id) {
    @Override
    public String toString() {
        return "ref " + worker + "/" + id;
    }
}
