package io.cuwire.cluster.runtime;

import io.cuwire.cluster.rpc.Values;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The models a node holds: the cluster worker's broadcast models and the Spark executor's fetched ones, by model id,
 * one version each, reference-counted by the tasks using them.
 *
 * <h2>Ownership and close policy</h2>
 * A model put into the cache ({@link #put}, or loaded by {@link #acquire(long, long, Supplier)}) belongs to it. Users
 * take it with a {@link Lease} and give it back by closing the lease (closing twice does nothing). A model leaves the
 * cache in one of four ways, and is closed ({@link Values#close}) exactly once, when its last lease is closed, or at
 * once when none is open:
 * <table>
 *   <caption>How a model leaves the cache</caption>
 *   <tr><td>a new version of its id is put</td><td>the old version is retired</td></tr>
 *   <tr><td>{@link #drop} of its id up to its version</td><td>the owner said so (Spark's unpublish)</td></tr>
 *   <tr><td>{@link #evictOne} (the device allocator's reclaimer)</td><td>the least recently used model that no
 *       lease holds: one in use is never evicted</td></tr>
 *   <tr><td>{@link #close}</td><td>every model, whether or not a lease holds it</td></tr>
 * </table>
 * A model's last use is the tick it was put, {@linkplain #holds confirmed} or leased at. Thread-safe.
 */
public final class ModelCache implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.cuwire.cluster.runtime.ModelCache");

    private final String owner;
    private final TypeRegistry registry;
    private final Map<Long, Entry> models = new ConcurrentHashMap<>();
    /** Loads in progress ({@link #acquire(long, long, Supplier)}), by id and version. */
    private final Map<Key, CompletableFuture<Void>> loading = new ConcurrentHashMap<>();
    /** The cache's clock. */
    private final AtomicLong uses = new AtomicLong();
    /** The version of each model evicted and not cached since, for the message of a lease asked for it. */
    private final Map<Long, Long> evicted = new ConcurrentHashMap<>();

    private final AtomicLong evictions = new AtomicLong();

    /**
     * An empty cache.
     *
     * @param owner who holds it, for messages ({@code worker 3})
     * @param registry the registry that gives a model's device bytes (its {@code cuda}-family form, no copy made)
     */
    public ModelCache(String owner, TypeRegistry registry) {
        this.owner = owner;
        this.registry = registry;
    }

    /** A model in use by its holder; closing it gives the use back. */
    public interface Lease extends AutoCloseable {
        /** The model; valid until the lease is closed. */
        Object value();

        /** Gives the use back; the model is closed if it left the cache and this was its last lease. */
        @Override
        void close();
    }

    private record Key(long id, long version) {}

    /**
     * A cached model, its leases and its last use. A retired version is closed once no lease holds it; an evicted one
     * is claimed (no lease may take it any more) while none does, then closed.
     */
    private final class Entry {
        /** {@code users} once claimed for closing: no lease may take it. */
        private static final int CLAIMED = Integer.MIN_VALUE;
        /** {@code deviceBytes} until first asked. */
        private static final long NOT_YET = -2;

        final long id;
        final long version;
        final Object value;
        private final AtomicInteger users = new AtomicInteger();
        private final AtomicBoolean closed = new AtomicBoolean();
        volatile long lastUse;
        volatile boolean retired;
        /** Bytes of its device frames, worked out when first asked; -1 if they cannot be. */
        private volatile long deviceBytes = NOT_YET;

        Entry(long id, long version, Object value) {
            this.id = id;
            this.version = version;
            this.value = value;
            this.lastUse = uses.incrementAndGet();
        }

        /** Takes it (used at tick {@code now}), unless it was claimed for closing. */
        boolean tryAcquire(long now) {
            for (int u = users.get(); u >= 0; u = users.get()) {
                if (users.compareAndSet(u, u + 1)) {
                    lastUse = now;
                    return true;
                }
            }
            return false;
        }

        void release() {
            if (users.decrementAndGet() == 0 && retired && claim()) {
                closeOnce();
            }
        }

        void retire() {
            retired = true;
            if (claim()) {
                closeOnce();
            }
        }

        boolean inUse() {
            return users.get() > 0;
        }

        boolean isClosed() {
            return users.get() < 0 || closed.get();
        }

        /** Claims it for closing if no lease holds it: none can take it afterwards. */
        boolean claim() {
            return users.compareAndSet(0, CLAIMED);
        }

        void closeOnce() {
            if (closed.compareAndSet(false, true)) {
                Values.close(value);
            }
        }

        Lease lease() {
            AtomicBoolean done = new AtomicBoolean();
            return new Lease() {
                @Override
                public Object value() {
                    return value;
                }

                @Override
                public void close() {
                    if (done.compareAndSet(false, true)) {
                        release();
                    }
                }
            };
        }

        /** The bytes of its device frames, or -1 when its {@code cuda} form cannot be made; worked out once. */
        long deviceBytes() {
            long b = deviceBytes;
            if (b == NOT_YET && tryAcquire(lastUse)) {
                try (Serialized s = registry.serialize(value, Family.CUDA)) {
                    b = 0;
                    for (FrameDescriptor d : s.frameDescriptors()) {
                        b += d.kind() == MemoryKind.DEVICE ? d.length() : 0;
                    }
                } catch (RuntimeException e) {
                    b = -1;
                } finally {
                    release();
                }
                deviceBytes = b;
            }
            return b;
        }
    }

    /**
     * Caches {@code value} as model {@code id} v{@code version}; the version it replaces is retired after
     * {@code before} ran (the acknowledgement of its successor, say, so that closing stays off its path).
     */
    public void put(long id, long version, Object value, Runnable before) {
        Entry old = insert(new Entry(id, version, value));
        before.run();
        if (old != null) {
            old.retire();
        }
    }

    private Entry insert(Entry e) {
        evicted.remove(e.id);
        return models.put(e.id, e);
    }

    /** Whether the cache holds model {@code id} v{@code version}; if it does, that counts as a use. */
    public boolean holds(long id, long version) {
        Entry m = models.get(id);
        boolean held = m != null && m.version == version && !m.isClosed();
        if (held) {
            m.lastUse = uses.incrementAndGet();
        }
        return held;
    }

    /**
     * A lease of model {@code id} v{@code version}.
     *
     * @param what the handle's text, for the message
     * @param missing makes the exception thrown when the cache does not hold it (the cluster's
     *     {@code ClusterException}), of a message naming what it holds of that id and whether it was evicted to make
     *     room
     */
    public Lease acquire(long id, long version, String what, Function<String, RuntimeException> missing) {
        Entry m = models.get(id);
        if (m == null || m.version != version || !m.tryAcquire(uses.incrementAndGet())) {
            Long gone = evicted.get(id);
            throw missing.apply(what + " is not in " + owner + "'s cache (cached: "
                    + (m == null || m.isClosed() ? "none" : "v" + m.version) + ")"
                    + (gone != null && gone == version
                            ? ": it was evicted to make room in the device's memory; " + "broadcast it again"
                            : ""));
        }
        return m.lease();
    }

    /** A lease of model {@code id} v{@code version} if the cache holds it, else {@code null}. */
    private Lease tryAcquire(long id, long version) {
        Entry m = models.get(id);
        return m != null && m.version == version && m.tryAcquire(uses.incrementAndGet()) ? m.lease() : null;
    }

    /**
     * A lease of model {@code id} v{@code version}, loaded by {@code load} first when the cache does not hold it:
     * one caller loads, the others asking meanwhile wait for that load.
     *
     * @throws IllegalStateException if the load failed for another caller (its failure is the cause), or the wait
     *     was interrupted
     * @throws RuntimeException what {@code load} threw, for the caller that loaded
     */
    public Lease acquire(long id, long version, Supplier<Object> load) {
        Key key = new Key(id, version);
        while (true) {
            Lease l = tryAcquire(id, version);
            if (l != null) {
                return l;
            }
            CompletableFuture<Void> mine = new CompletableFuture<>();
            CompletableFuture<Void> other = loading.putIfAbsent(key, mine);
            if (other != null) {
                try {
                    other.get();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted waiting for model " + id + " v" + version, e);
                } catch (ExecutionException e) {
                    throw new IllegalStateException(
                            "fetching model " + id + " v" + version + " failed: " + e.getCause(), e.getCause());
                }
                continue;
            }
            try {
                Lease loaded = tryAcquire(id, version); // a load that ended between the first look and now
                if (loaded != null) {
                    mine.complete(null);
                    return loaded;
                }
                Entry e = new Entry(id, version, load.get());
                e.tryAcquire(e.lastUse);
                Entry old = insert(e);
                if (old != null) {
                    old.retire();
                }
                mine.complete(null);
                return e.lease();
            } catch (RuntimeException | Error e) {
                mine.completeExceptionally(e);
                throw e;
            } finally {
                loading.remove(key, mine);
            }
        }
    }

    /**
     * A lease of model {@code id} v{@code version}, waiting at most {@code timeout} for a load of it in progress; or
     * {@code null} if the cache does not hold it (or the load failed, or took longer).
     */
    public Lease awaitAcquire(long id, long version, Duration timeout) {
        CompletableFuture<Void> f = loading.get(new Key(id, version));
        if (f != null) {
            try {
                f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } catch (ExecutionException | TimeoutException e) {
                return null;
            }
        }
        return tryAcquire(id, version);
    }

    /** Drops model {@code id} if its version is at most {@code version}; returns whether it did. */
    public boolean drop(long id, long version) {
        Entry m = models.get(id);
        if (m != null && m.version <= version && models.remove(id, m)) {
            m.retire();
            return true;
        }
        return false;
    }

    /** The ids of the models cached now. */
    public List<Long> ids() {
        return new ArrayList<>(models.keySet());
    }

    /** The number of models cached now (some may be closing). */
    public int size() {
        return models.size();
    }

    /** Models evicted to make room so far. */
    public long evictions() {
        return evictions.get();
    }

    /**
     * The reclaimer of a device allocator ({@link io.cuwire.memory.BufferAllocator.Reclaimer}): evicts the least
     * recently used model that no lease holds, to make room for {@code bytes}; whether there was one.
     */
    public boolean evictOne(long bytes) {
        while (true) {
            Entry lru = null;
            for (Entry m : models.values()) {
                if (!m.inUse() && !m.isClosed() && (lru == null || m.lastUse < lru.lastUse)) {
                    lru = m;
                }
            }
            if (lru == null) {
                return false;
            }
            long size = lru.deviceBytes();
            if (!lru.claim()) {
                continue; // a lease took it meanwhile: look again
            }
            models.remove(lru.id, lru);
            evicted.put(lru.id, lru.version);
            evictions.incrementAndGet();
            lru.closeOnce();
            LOG.log(
                    System.Logger.Level.INFO,
                    "cuwire " + owner + ": evicted model " + lru.id + " v" + lru.version
                            + " (" + (size < 0 ? "its device bytes unknown" : size + " bytes of device frames")
                            + ", least "
                            + "recently used, no task holding it) to make room for an allocation of " + bytes
                            + " bytes");
            return true;
        }
    }

    /**
     * The cache's line in the device's memory report ({@link io.cuwire.memory.MemoryHolder}); {@code null}
     * when it is empty and never evicted.
     */
    public String describe() {
        int count = 0;
        int inUse = 0;
        long bytes = 0;
        boolean unknown = false;
        for (Entry m : models.values()) {
            if (m.isClosed()) {
                continue;
            }
            count++;
            inUse += m.inUse() ? 1 : 0;
            long b = m.deviceBytes();
            unknown |= b < 0;
            bytes += Math.max(0, b);
        }
        if (count == 0 && evictions.get() == 0) {
            return null;
        }
        return "model cache of " + owner + ": " + count + " model(s), " + bytes + " bytes of device frames"
                + (unknown ? " (and models whose size is unknown)" : "") + ", " + inUse + " in use by running tasks "
                + "(never evicted), " + (count - inUse) + " evictable; " + evictions.get() + " evicted so far";
    }

    /** Closes every cached model, leased or not, and forgets them. */
    @Override
    public void close() {
        for (Entry m : models.values()) {
            m.closeOnce();
        }
        models.clear();
    }
}
