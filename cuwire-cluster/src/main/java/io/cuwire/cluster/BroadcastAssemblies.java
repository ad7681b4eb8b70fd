package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Values;
import io.cuwire.cluster.runtime.ModelCache;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;

/**
 * The broadcasts arriving at a worker in chunks down a chain or tree of workers
 * ({@link WorkerRequest.BroadcastBegin}, {@link WorkerRequest.BroadcastChunk}, {@link WorkerRequest.BroadcastAbort}):
 * each assembly's frames, its forwards to the workers below, its budget, and its end in the worker's
 * {@link ModelCache}. The other side of {@link ForwardedBroadcast}.
 *
 * <p>An assembly belongs to the connection it arrives on: when that connection breaks ({@link #senderGone}), the
 * assemblies still arriving on it are dropped and their memory released (once forwards of it are done), and the
 * client is told. The bytes allocated for arriving models and not yet filled are bounded by
 * {@code maxAssemblyBytes}; a begin beyond it is refused with a {@link ClusterException}. Thread-safe: the maps and
 * the budget are guarded by {@code assemblies}' lock, each assembly by its own.
 */
final class BroadcastAssemblies {
    /** What the assemblies need of their worker: its client's endpoint, and endpoints to the other workers. */
    interface Links {
        /** The client's endpoint; {@code null} before it connected. */
        Endpoint client();

        /** An endpoint to worker {@code worker}, connecting if needed. */
        Endpoint peer(int worker);
    }

    private final int index;
    private final BufferAllocator<DeviceBuffer> device;
    private final BufferAllocator<HostBuffer> host;
    private final TypeRegistry registry;
    private final DecodeTarget target;
    private final ModelCache models;
    private final Executor executor;
    private final Links links;
    /** Broadcasts arriving in chunks, by sender and broadcast id; changed under {@code assemblies}' lock. */
    private final Map<AssemblyKey, Assembly> assemblies = new ConcurrentHashMap<>();
    /** Broadcasts dropped before they began here, and those being decoded; guarded by {@code assemblies}. */
    private final Set<Long> aborted = new HashSet<>();

    private final Set<Long> finishing = new HashSet<>();
    /** Bytes allocated for arriving broadcasts and not yet filled, and their bound; guarded by {@code assemblies}. */
    private long unfilledBytes;

    private final long maxAssemblyBytes;

    BroadcastAssemblies(
            int index,
            BufferAllocator<DeviceBuffer> device,
            BufferAllocator<HostBuffer> host,
            long maxAssemblyBytes,
            TypeRegistry registry,
            DecodeTarget target,
            ModelCache models,
            Executor executor,
            Links links) {
        this.index = index;
        this.device = device;
        this.host = host;
        this.maxAssemblyBytes = maxAssemblyBytes;
        this.registry = registry;
        this.target = target;
        this.models = models;
        this.executor = executor;
        this.links = links;
    }

    /** An arriving broadcast's key: the connection it arrives on, and its id (the client's request id). */
    private record AssemblyKey(Endpoint sender, long bid) {}

    /**
     * A model arriving in chunks: its header, one buffer per frame (the model's own memory once complete), the
     * workers it is forwarded to, and the forwards still in flight. Guarded by its own lock.
     */
    private final class Assembly {
        final AssemblyKey key;
        final long bid;
        final long id;
        final long version;
        final Serialized.Header header;
        final List<Buffer> frames = new ArrayList<>();
        final List<Child> children;
        final List<CompletableFuture<?>> forwards = new ArrayList<>();
        /** Bytes not yet filled; counted in {@code unfilledBytes} while positive and not done. */
        long missing;

        boolean done;

        /** Parses the header and reserves its frames' bytes in the budget; the caller holds its lock. */
        Assembly(AssemblyKey key, long id, long version, byte[] headerBytes, List<Child> children) {
            this.key = key;
            this.bid = key.bid();
            this.id = id;
            this.version = version;
            this.header = Serialized.parseHeader(headerBytes, Limits.DEFAULT);
            this.children = children;
            long total = 0;
            for (FrameDescriptor d : header.frames()) {
                total += d.length(); // each at most Limits.maxFrameBytes, at most maxFrames of them: no overflow
            }
            if (total > maxAssemblyBytes - unfilledBytes) {
                throw new ClusterException("worker " + index + " refused broadcast " + bid + " of model " + id + " v"
                        + version + ": its " + total + " bytes would make " + (unfilledBytes + total) + " bytes "
                        + "allocated for arriving broadcasts and not yet filled, beyond the worker's budget of "
                        + maxAssemblyBytes + " (" + Worker.MAX_ASSEMBLY_BYTES_PROPERTY + ")");
            }
            try {
                for (FrameDescriptor d : header.frames()) {
                    frames.add(d.kind() == MemoryKind.DEVICE ? device.allocate(d.length()) : host.allocate(d.length()));
                }
            } catch (RuntimeException e) {
                Values.close(frames);
                throw e;
            }
            missing = total;
            unfilledBytes += total;
        }

        /** {@code bytes} were filled in; the caller holds this assembly's lock. */
        void filled(long bytes) {
            long counted = Math.max(0, Math.min(bytes, missing));
            missing -= bytes;
            synchronized (assemblies) {
                unfilledBytes -= counted;
            }
        }

        /** No more bytes will be filled in: what is missing leaves the budget; the caller holds this lock. */
        void settle() {
            done = true;
            synchronized (assemblies) {
                unfilledBytes -= Math.max(0, missing);
            }
            missing = 0;
        }

        /** Frees the frames once no forward reads them any more; the future completes when they are. */
        CompletableFuture<Void> discard() {
            return CompletableFuture.allOf(forwards.toArray(CompletableFuture[]::new))
                    .handle((v, e) -> {
                        Values.close(frames);
                        return null;
                    });
        }
    }

    /** A worker this one forwards to, its own subtree, and whether forwarding to it broke. */
    private static final class Child {
        final int worker;
        final List<WorkerRequest.Subtree> subtree;
        Endpoint endpoint;
        volatile boolean broken;

        Child(WorkerRequest.Subtree tree) {
            this.worker = tree.worker();
            this.subtree = tree.children();
        }
    }

    /**
     * A begin: its children are the tree below this worker (one child each for a chain). The begin goes on to each
     * child at once; a child that cannot be reached is reported in this worker's acknowledgement.
     */
    void begin(Endpoint from, WorkerRequest.BroadcastBegin r) {
        long id = r.model();
        long version = r.version();
        byte[] headerBytes = r.header();
        List<Child> children = new ArrayList<>();
        for (WorkerRequest.Subtree t : r.children()) {
            children.add(new Child(t));
        }
        Assembly asm;
        AssemblyKey key = new AssemblyKey(from, r.id());
        synchronized (assemblies) {
            if (aborted.remove(r.id())) {
                return;
            }
            try {
                if (assemblies.containsKey(key)) {
                    throw new ClusterException("broadcast " + r.id() + " is already arriving on this connection");
                }
                asm = new Assembly(key, id, version, headerBytes, children);
            } catch (RuntimeException e) {
                links.client().reply(Reply.failed(r.id(), e));
                return;
            }
            assemblies.put(key, asm);
        }
        if (!from.isOpen()) {
            senderGone(from, new ClusterException("closed while the broadcast began")); // its drop may have run first
            return;
        }
        for (Child c : children) {
            try {
                c.endpoint = links.peer(c.worker);
                c.endpoint
                        .send(new WorkerRequest.BroadcastBegin(r.id(), id, version, headerBytes, c.subtree))
                        .whenComplete((m, e) -> c.broken |= e != null);
            } catch (RuntimeException e) {
                c.broken = true;
            }
        }
        synchronized (asm) {
            maybeFinish(asm);
        }
    }

    /**
     * A chunk: copied into place, then that slice of the model's own frame goes on to each child (the received chunk
     * is freed at once, and the children see one allocation per frame).
     */
    void chunk(Endpoint from, WorkerRequest.BroadcastChunk r) {
        Assembly asm = assemblies.get(new AssemblyKey(from, r.id()));
        try (NdArray chunk = r.bytes()) {
            if (asm == null) {
                return;
            }
            int frame = r.frame();
            long offset = r.offset();
            synchronized (asm) {
                if (asm.done) {
                    return;
                }
                try {
                    Buffer target = asm.frames.get(frame);
                    CopyEngine.copy(chunk.buffer(), 0, target, offset, chunk.byteSize());
                    for (Child c : asm.children) {
                        if (!c.broken) {
                            NdArray slice = NdArray.view(target, offset, DType.UINT8, Order.C, chunk.byteSize());
                            CompletableFuture<?> f = c.endpoint.send(
                                    new WorkerRequest.BroadcastChunk(r.id(), frame, offset, slice), Family.CUDA);
                            asm.forwards.add(f.whenComplete((m, e) -> {
                                slice.close();
                                c.broken |= e != null;
                            }));
                        }
                    }
                    asm.filled(chunk.byteSize());
                    maybeFinish(asm);
                } catch (RuntimeException e) {
                    asm.settle();
                    assemblies.remove(asm.key);
                    asm.discard();
                    links.client().reply(Reply.failed(r.id(), e));
                }
            }
        }
    }

    /** Once every byte is in place and every forward settled: the model goes to the cache and the client hears. */
    private void maybeFinish(Assembly asm) {
        if (asm.missing != 0 || asm.done) {
            return;
        }
        asm.settle();
        CompletableFuture.allOf(asm.forwards.toArray(CompletableFuture[]::new))
                .whenCompleteAsync(
                        (v, e) -> {
                            synchronized (assemblies) {
                                if (assemblies.remove(asm.key) == null) {
                                    return;
                                }
                                finishing.add(asm.bid);
                            }
                            List<Integer> unreached = new ArrayList<>();
                            for (Child c : asm.children) {
                                if (c.broken) {
                                    unreached.add(c.worker);
                                }
                            }
                            try (Serialized s = Serialized.received(asm.header, asm.frames)) {
                                models.put(
                                        asm.id,
                                        asm.version,
                                        registry.deserialize(s, target),
                                        () -> links.client().reply(Reply.ok(asm.bid, unreached)));
                            } catch (RuntimeException x) {
                                links.client().reply(Reply.failed(asm.bid, x));
                            } finally {
                                synchronized (assemblies) {
                                    finishing.remove(asm.bid);
                                }
                            }
                        },
                        executor);
    }

    /**
     * An abort: the client gave up on this worker's copy (a worker above it in the tree failed). Answers the
     * broadcast's own id: ok if the model is already here, else failed; a begin that arrives later is dropped.
     */
    void abort(WorkerRequest.BroadcastAbort r) {
        long bid = r.broadcast();
        long id = r.model();
        long version = r.version();
        String why = r.why();
        Assembly asm = null;
        synchronized (assemblies) {
            for (AssemblyKey key : assemblies.keySet()) {
                if (key.bid() == bid) {
                    asm = assemblies.remove(key); // one per broadcast: the client's connection or a parent's
                    break;
                }
            }
            if (asm == null) {
                if (finishing.contains(bid)) {
                    return;
                }
                if (models.holds(id, version)) {
                    links.client().reply(Reply.ok(bid, List.of()));
                    return;
                }
                aborted.add(bid);
            }
        }
        if (asm != null) {
            synchronized (asm) {
                asm.settle();
                asm.discard();
            }
        }
        links.client()
                .reply(Reply.failed(
                        bid,
                        new ClusterException("worker " + index + " dropped the broadcast of " + "model " + id + " v"
                                + version + ": " + why)));
    }

    /**
     * A connection broke: the broadcasts still arriving on it are dropped and their memory freed (once no forward
     * reads it), and the client hears that each failed.
     */
    void senderGone(Endpoint sender, Throwable why) {
        List<Assembly> arriving = new ArrayList<>();
        synchronized (assemblies) {
            for (Assembly asm : assemblies.values()) {
                if (asm.key.sender() == sender) {
                    arriving.add(asm);
                }
            }
        }
        for (Assembly asm : arriving) {
            synchronized (asm) {
                if (asm.done) {
                    continue; // every byte is here (or it was dropped already): it finishes as it would have
                }
                asm.settle();
                synchronized (assemblies) {
                    assemblies.remove(asm.key);
                }
                asm.discard();
            }
            Endpoint c = links.client();
            if (c != null && c != sender) {
                c.reply(Reply.failed(
                        asm.bid,
                        new ClusterException("worker " + index + " dropped the broadcast of " + "model " + asm.id + " v"
                                + asm.version + ": the connection it arrived on broke: " + why)));
            }
        }
    }

    /** Drops every assembly (the worker stops); the future completes once their memory is freed. */
    CompletableFuture<Void> discardAll() {
        List<CompletableFuture<Void>> discarded = new ArrayList<>();
        synchronized (assemblies) {
            for (Assembly a : assemblies.values()) {
                discarded.add(a.discard());
            }
            assemblies.clear();
        }
        return CompletableFuture.allOf(discarded.toArray(CompletableFuture[]::new));
    }
}
