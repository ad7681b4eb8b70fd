package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Request;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.WireType;
import java.util.List;

/**
 * The requests a cluster worker serves ({@link Worker}): one record per kind, each a registered type of its own, sent
 * by the client (and, for {@link Get} and the chunked broadcast, by other workers). A record's constructor checks
 * what the types of its components cannot (the elements of its lists, its numbers): on the receiving side it runs
 * while the request is decoded, so that a malformed request is refused as undecodable, naming the field, and nothing
 * it carried stays allocated. The answers are {@link io.cuwire.cluster.rpc.Reply} records; {@code docs/wire-format.md}
 * lists each kind with its fields and answers.
 */
sealed interface WorkerRequest extends Request {
    /**
     * A heartbeat, answered at once on the reader thread.
     *
     * @param id the request's id
     */
    @WireType("cuwire.worker.Ping")
    record Ping(long id) implements WorkerRequest {}

    /**
     * The listening addresses of all workers, by index (a worker fetches another's values from them).
     *
     * @param id the request's id
     * @param addresses the addresses
     */
    @WireType("cuwire.worker.Peers")
    record Peers(long id, List<String> addresses) implements WorkerRequest {
        public Peers {
            addresses = checked(addresses, String.class, "addresses");
        }
    }

    /**
     * Stores a value; answered with its {@link ObjectRef}.
     *
     * @param id the request's id
     * @param value the value
     */
    @WireType("cuwire.worker.Put")
    record Put(long id, Object value) implements WorkerRequest {}

    /**
     * The stored value {@code ref} names (the client's gather, or another worker's fetch).
     *
     * @param id the request's id
     * @param ref the value's ref
     */
    @WireType("cuwire.worker.Get")
    record Get(long id, ObjectRef ref) implements WorkerRequest {
        public Get {
            if (ref == null) {
                throw new IllegalArgumentException("get: no ref");
            }
        }
    }

    /**
     * Closes and forgets stored values.
     *
     * @param id the request's id
     * @param objects the ids of the values
     */
    @WireType("cuwire.worker.Free")
    record Free(long id, List<Long> objects) implements WorkerRequest {
        public Free {
            objects = checked(objects, Long.class, "objects");
        }
    }

    /** A task to run: its name and arguments (values, {@link ObjectRef}s, model handles). */
    sealed interface TaskRequest extends WorkerRequest {
        /** The task's registered name. */
        String task();

        /** The task's arguments. */
        List<Object> args();
    }

    /**
     * Runs a task and stores its result; answered with the result's {@link ObjectRef}.
     *
     * @param id the request's id
     * @param task the task's registered name
     * @param args its arguments
     */
    @WireType("cuwire.worker.Run")
    record Run(long id, String task, List<Object> args) implements TaskRequest {
        public Run {
            args = args == null ? List.of() : args;
        }
    }

    /**
     * Runs a task and answers its result, storing nothing.
     *
     * @param id the request's id
     * @param task the task's registered name
     * @param args its arguments
     */
    @WireType("cuwire.worker.Call")
    record Call(long id, String task, List<Object> args) implements TaskRequest {
        public Call {
            args = args == null ? List.of() : args;
        }
    }

    /**
     * A model sent whole ({@link EachInTurnBroadcast}): its encoded header and its frames, cached once rebuilt.
     *
     * @param id the request's id, which is the broadcast's
     * @param model the model's id
     * @param version its version
     * @param header the model's encoded header
     * @param frames its frames, in the header's order
     */
    @WireType("cuwire.worker.CacheModel")
    record CacheModel(long id, long model, long version, byte[] header, List<ModelFrame> frames)
            implements WorkerRequest {
        public CacheModel {
            if (header == null) {
                throw new IllegalArgumentException("model " + model + " v" + version + ": no header");
            }
            frames = checked(frames, ModelFrame.class, "frames");
        }
    }

    /**
     * Whether the worker holds a model's version: answered {@code Ok} if it does, {@code Missing} if not.
     *
     * @param id the request's id
     * @param model the model's id
     * @param version its version
     */
    @WireType("cuwire.worker.HasModel")
    record HasModel(long id, long model, long version) implements WorkerRequest {}

    /**
     * The start of a model arriving in chunks down a chain or tree of workers ({@link ForwardedBroadcast}); it goes
     * on to each child at once. Never answered itself: the worker answers the broadcast's id to its client once the
     * model is cached, naming the children it could not reach.
     *
     * @param id the request's id, which is the broadcast's
     * @param model the model's id
     * @param version its version
     * @param header the model's encoded header
     * @param children the tree below this worker (one child each for a chain)
     */
    @WireType("cuwire.worker.BroadcastBegin")
    record BroadcastBegin(long id, long model, long version, byte[] header, List<Subtree> children)
            implements WorkerRequest {
        public BroadcastBegin {
            if (header == null) {
                throw new IllegalArgumentException("broadcast " + id + ": no header");
            }
            children = checked(children, Subtree.class, "children");
        }
    }

    /**
     * A worker of a broadcast's topology and the workers below it.
     *
     * @param worker the worker's index
     * @param children the workers it forwards to
     */
    @WireType("cuwire.worker.Subtree")
    record Subtree(int worker, List<Subtree> children) {
        public Subtree {
            children = checked(children, Subtree.class, "children");
        }
    }

    /**
     * A chunk of a model arriving down a chain or tree: copied into place and forwarded to the children.
     *
     * @param id the broadcast's id (its begin's)
     * @param frame the frame the chunk belongs to
     * @param offset where in the frame it goes
     * @param bytes the chunk, as bytes ({@code uint8})
     */
    @WireType("cuwire.worker.BroadcastChunk")
    record BroadcastChunk(long id, int frame, long offset, NdArray bytes) implements WorkerRequest {
        public BroadcastChunk {
            if (bytes == null) {
                throw new IllegalArgumentException("broadcast " + id + ": a chunk without bytes");
            }
        }
    }

    /**
     * Drops a model still arriving (a worker above failed); answered under the broadcast's id: {@code Ok} if the
     * model is here already, else {@code Failed}.
     *
     * @param id the request's id
     * @param broadcast the broadcast's id
     * @param model the model's id
     * @param version its version
     * @param why why the client gave up, for messages
     */
    @WireType("cuwire.worker.BroadcastAbort")
    record BroadcastAbort(long id, long broadcast, long model, long version, String why) implements WorkerRequest {}

    /**
     * The worker's copy counters and memory in use: answered with its {@link WorkerStats}.
     *
     * @param id the request's id
     */
    @WireType("cuwire.worker.Stats")
    record Stats(long id) implements WorkerRequest {}

    /**
     * Frees everything, closes the allocators (leaks are reported) and exits; only the client may ask.
     *
     * @param id the request's id
     */
    @WireType("cuwire.worker.Shutdown")
    record Shutdown(long id) implements WorkerRequest {}

    /** {@code list} (none: empty) if each element is a {@code type}, as an unmodifiable copy. */
    private static <T> List<T> checked(List<T> list, Class<T> type, String what) {
        if (list == null) {
            return List.of();
        }
        for (Object o : list) {
            if (!type.isInstance(o)) {
                throw new IllegalArgumentException(what + ": expected " + type.getSimpleName() + " elements, got "
                        + (o == null ? "null" : o.getClass().getName()));
            }
        }
        return List.copyOf(list);
    }
}
