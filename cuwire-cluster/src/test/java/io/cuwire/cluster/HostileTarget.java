package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Request;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.function.LongFunction;

/**
 * The node a {@link HostileCampaign} attacks, in one of the roles the node runtime plays: the cluster worker
 * ({@link HostileWorker}) or the Spark executor's endpoint (cuwire-spark's {@code HostileExecutor}). Each runs the node
 * in a JVM of its own, started as that role starts it, with its legitimate client in this JVM. The campaign is written
 * once over this interface: the attacks on the wire, the fuzzers and the checks are the same for every role; a role
 * says only how its node is reached, which requests it serves (the fuzzers' seeds, a request that carries a value),
 * what its client's work is, how its accounts are read, and how it answers the attacks whose answer is the role's own
 * (a value stored or refused, an unknown operation, a sender that leaves in the middle).
 */
public interface HostileTarget extends AutoCloseable {
    /** The role, for the log: {@code worker}, {@code executor}. */
    String role();

    /** Where the node listens ({@code tcp://127.0.0.1:port}). */
    String address();

    /** The node's process id (its emulated device's files carry it). */
    long pid();

    /** The types the node's peers encode their messages with: its requests, the replies, the estimators. */
    TypeRegistry registry();

    /** The family chain a peer of the node offers. */
    Family[] families();

    /** Whether the node's connections agree the {@code java} family (the worker's do, for its allow-listed types). */
    boolean takesJavaFamily();

    /** A request the node answers at once, on any connection: {@code Ok}. */
    Request ping(long id);

    /** The header fuzzer's seeds: the node's requests (and what else it decodes from a peer), over {@code values}. */
    List<SeedRequest> seeds(SeedValues values);

    /**
     * A message of the node's in whose field {@link #carrierField()} the node decodes {@code value} whatever it is
     * (before it looks at the message): a request of the node's where it has one that takes a value (the worker's
     * {@code put}); else the message through which a peer can still make the node decode a value of its choosing
     * (a Spark executor's requests take none: its carrier is a reply it did not ask for), which the node does not
     * answer ({@link #carrierUnanswered}).
     */
    Object carrier(long id, Object value);

    /**
     * Why the node answers no {@link #carrier} (it is no request of the node's), or empty where it answers it. The
     * campaign then checks what still applies to the carrier (the node decodes it, frees what it decoded, and cuts a
     * peer off beyond its decode budget) and reports each check of the answer as not applicable, with this reason.
     */
    default Optional<String> carrierUnanswered() {
        return Optional.empty();
    }

    /** The name of the field of {@link #carrier} that holds the value. */
    String carrierField();

    /**
     * The client's work, checked: refits the model on new targets drawn from {@code random}, broadcasts it (a new
     * version), has the node predict with it and compares with the model's own prediction.
     */
    void serve(SplittableRandom random) throws Exception;

    /** The node's accounts now: cheap, no GC. */
    Accounts accounts() throws Exception;

    /**
     * The node JVM's direct and mapped buffer pools after a GC ({@link #bufferPools()} there): {@code [direct count,
     * direct bytes, mapped count, mapped bytes]}.
     */
    List<Long> pools() throws Exception;

    /** Frees whatever the attackers left stored on the node (a mutant that still decoded into a store). */
    void sweep() throws Exception;

    /**
     * Finding 2: {@code peer} sends the node {@code value} (65,536 one-byte device frames) as the role takes a value,
     * and the node lets it go again; fails unless the node answered as it must.
     */
    void storeAndRelease(TestClient peer, Object value) throws Exception;

    /**
     * Finding 3: {@code peer} asks for an operation the node does not have, giving it {@code value} (2^60 paths through
     * shared lists); fails unless the node answered with its refusal.
     */
    void unknownOperation(TestClient peer, List<Object> value) throws Exception;

    /**
     * Finding 5: a peer begins a large transfer with the node (a broadcast arriving, a model asked for) and leaves in
     * the middle; fails unless the node's memory comes back at once.
     */
    void departedPeer(HostileCampaign campaign) throws Exception;

    /**
     * Stops the node as its role stops it (the cluster closed, the executor shut down) and checks that it stopped
     * once and cleanly (its exit code, its last lines); the campaign checks the rest of its output.
     */
    void stop() throws Exception;

    /** The lines the node's JVM printed so far. */
    List<String> output();

    /** Stops the node's JVM, if it still runs; closes what this side holds. */
    @Override
    void close();

    /**
     * A seed of the header fuzzer: a valid message of the node's wire made of an id (a request of the node's, or any
     * other message the node decodes), sent with {@code chain}.
     */
    record SeedRequest(String name, LongFunction<?> request, Family... chain) {}

    /** The values the seeds carry: a device array, a host array, a fitted model, a value of every kind. */
    record SeedValues(NdArray deviceArray, NdArray hostArray, LinearRegression model, List<Object> composite) {}

    /**
     * The node's accounts.
     *
     * @param deviceBytes device bytes its allocators hold
     * @param hostBytes host bytes its allocators hold
     * @param objects values it stores for peers (a Spark executor stores none)
     * @param models models in its cache
     */
    record Accounts(long deviceBytes, long hostBytes, long objects, long models) {}

    /** This JVM's direct and mapped buffer pools after a GC, as {@link #pools()} reads the node's. */
    static List<Long> bufferPools() {
        System.gc();
        List<Long> out = new ArrayList<>();
        for (String name : List.of("direct", "mapped")) {
            BufferPoolMXBean pool = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                    .filter(b -> b.getName().equals(name))
                    .findFirst()
                    .orElseThrow();
            out.add(pool.getCount());
            out.add(pool.getMemoryUsed());
        }
        return out;
    }
}
