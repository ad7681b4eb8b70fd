package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Reply;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import io.cuwire.test.TestRandom;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A soak of mixed legitimate and hostile connections against one worker (issue 15, deliverable 7; a benchmark, not
 * in CI): the {@link HostileCampaign} of the hostile-peer suite, its attacks run in batches until {@code n}
 * attacker connections were made, while a legitimate peer connects, stores and fetches a value and leaves, again and
 * again, and the worker's own client is served between batches. After each batch the worker must be back at its
 * baseline (accounts, store, buffer pools, files). Prints a Markdown summary: connections handled, legitimate requests
 * served and their latency percentiles, the worker's resident memory and direct memory before and after, and any
 * failure.
 *
 * <pre>
 * mvn -B -pl cuwire-cluster -am verify -Phostile-soak -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dcuwire.hostile.soak="10000 tcp"
 * </pre>
 * Arguments: {@code [connections=10000] [tcp|ipc]}; the seed is {@link TestRandom}'s.
 */
public final class HostileSoak {
    private HostileSoak() {}

    public static void main(String[] args) throws Exception {
        long target = args.length > 0 ? Long.parseLong(args[0]) : 10_000;
        String scheme = args.length > 1 ? args[1] : "tcp";
        long seed = TestRandom.seed("HostileSoak " + scheme);
        List<Long> legitNanos = Collections.synchronizedList(new ArrayList<>());
        AtomicLong legitConnections = new AtomicLong();
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        long start = System.nanoTime();
        try (HostileCampaign c =
                HostileCampaign.start(HostileWorker.start(scheme, System.err), scheme, seed, System.err)) {
            HostileWorker worker = (HostileWorker) c.target();
            long rssBefore = rss(c.workerPid());
            List<?> heapBefore = worker.heap();
            HostileCampaign.Snapshot before = c.snapshot();
            AtomicBoolean attacking = new AtomicBoolean(true);
            Thread legit =
                    legitimatePeer(c, new SplittableRandom(seed), attacking, legitNanos, legitConnections, failures);
            int batch = 0;
            List<String> batches = new ArrayList<>();
            try {
                while (c.connections.get() < target) {
                    long t = System.nanoTime();
                    List<Socket> stalled = c.stalled(50);
                    try {
                        c.churn(100);
                        c.fuzzHandshakes(300, 6);
                        c.fuzzHeaders(1500, 6);
                        c.serve();
                    } finally {
                        for (Socket s : stalled) {
                            s.close();
                        }
                    }
                    attacking.set(false);
                    legit.join();
                    if (!c.violations.isEmpty()) {
                        failures.addAll(c.violations);
                        c.violations.clear();
                    }
                    HostileCampaign.Snapshot now;
                    try {
                        now = c.checkBaseline("soak batch " + batch);
                    } catch (AssertionError e) {
                        failures.add("batch " + batch + ": " + e.getMessage());
                        now = c.snapshot();
                    }
                    List<?> heap = worker.heap();
                    batches.add(String.format(
                            Locale.ROOT,
                            "| %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %d |",
                            batch,
                            c.connections.get(),
                            c.mutants.get(),
                            (System.nanoTime() - t) / 1e9,
                            rss(c.workerPid()) / 1048576.0,
                            mib(heap.get(1)),
                            mib(heap.get(0)),
                            now.directBytes()));
                    System.err.println("[soak] " + batches.getLast());
                    batch++;
                    if (c.connections.get() < target) {
                        attacking.set(true);
                        legit = legitimatePeer(
                                c,
                                new SplittableRandom(seed + batch),
                                attacking,
                                legitNanos,
                                legitConnections,
                                failures);
                    }
                }
            } finally {
                attacking.set(false);
                legit.join();
            }
            HostileCampaign.Snapshot after = c.snapshot();
            long rssAfter = rss(c.workerPid());
            List<?> heapAfter = worker.heap();
            c.finish();
            print(
                    scheme,
                    seed,
                    target,
                    c,
                    legitConnections.get(),
                    legitNanos,
                    rssBefore,
                    rssAfter,
                    before,
                    after,
                    heapBefore,
                    heapAfter,
                    batches,
                    failures,
                    (System.nanoTime() - start) / 1e9);
        }
        if (!failures.isEmpty()) {
            System.exit(1);
        }
    }

    /** A thread that makes {@link #legitimateRoundTrip}s while {@code attacking}. */
    private static Thread legitimatePeer(
            HostileCampaign c,
            SplittableRandom r,
            AtomicBoolean attacking,
            List<Long> nanos,
            AtomicLong connections,
            List<String> failures) {
        return Thread.ofPlatform().name("soak-legitimate-peer").start(() -> {
            while (attacking.get()) {
                try {
                    nanos.add(legitimateRoundTrip(c, r));
                    connections.incrementAndGet();
                } catch (Exception | AssertionError e) {
                    failures.add("legitimate peer: " + e);
                }
            }
        });
    }

    /** A peer connects, stores a small device array, fetches it back, checks it, frees it and leaves; nanoseconds. */
    private static long legitimateRoundTrip(HostileCampaign c, SplittableRandom r) throws Exception {
        long t = System.nanoTime();
        try (TestClient peer = TestClient.connect(c.address, HostileCampaign.SECRET);
                NdArray value = MlTesting.array(peer.device, DType.FLOAT64, MlTesting.uniform(r, 128), 128)) {
            Reply put = peer.request(id -> new WorkerRequest.Put(id, value))
                    .get(HostileCampaign.SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS);
            if (!(put instanceof Reply.Ok(long putId, ObjectRef ref))) {
                throw new AssertionError("put: " + put);
            }
            Reply got = peer.request(id -> new WorkerRequest.Get(id, ref))
                    .get(HostileCampaign.SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS);
            try (NdArray back = (NdArray) ((Reply.Ok) got).value()) {
                if (!value.contentEquals(back)) {
                    throw new AssertionError("the value fetched back differs from the one stored");
                }
            }
            peer.request(id -> new WorkerRequest.Free(id, List.of(ref.id())))
                    .get(HostileCampaign.SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS);
        }
        return System.nanoTime() - t;
    }

    private static long rss(long pid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) << 10;
            }
        }
        return -1;
    }

    private static double mib(Object bytes) {
        return (Long) bytes / 1048576.0;
    }

    private static double percentileMillis(List<Long> sorted, double p) {
        if (sorted.isEmpty()) {
            return Double.NaN;
        }
        int i = (int) Math.min(sorted.size() - 1, Math.ceil(p * sorted.size()) - 1);
        return sorted.get(Math.max(0, i)) / 1e6;
    }

    private static void print(
            String scheme,
            long seed,
            long target,
            HostileCampaign c,
            long legitConnections,
            List<Long> legitNanos,
            long rssBefore,
            long rssAfter,
            HostileCampaign.Snapshot before,
            HostileCampaign.Snapshot after,
            List<?> heapBefore,
            List<?> heapAfter,
            List<String> batches,
            List<String> failures,
            double seconds) {
        List<Long> legit = new ArrayList<>(legitNanos);
        Collections.sort(legit);
        List<Long> served = new ArrayList<>(c.servedNanos);
        Collections.sort(served);
        System.out.println("## " + scheme + ": " + target + " attacker connections (seed " + seed + ")");
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "- run time %.1f s; attacker connections %d (handshake mutants, header mutants "
                        + "on authenticated connections, stalled handshakes, connect-and-close), header mutants %d (%d refused"
                        + " at the header); legitimate peer connections %d%n",
                seconds,
                c.connections.get(),
                c.mutants.get(),
                c.refusedHeaders.get(),
                legitConnections);
        System.out.printf(
                Locale.ROOT,
                "- legitimate peer round trips (connect, handshake, put, get, free, close): %d,"
                        + " p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms%n",
                legit.size(),
                percentileMillis(legit, 0.5),
                percentileMillis(legit, 0.9),
                percentileMillis(legit, 0.99),
                percentileMillis(legit, 1.0));
        System.out.printf(
                Locale.ROOT,
                "- the worker's client (refit, broadcast, put, predict, fetch, free): %d, "
                        + "p50 %.1f ms, p90 %.1f ms, max %.1f ms%n",
                served.size(),
                percentileMillis(served, 0.5),
                percentileMillis(served, 0.9),
                percentileMillis(served, 1.0));
        System.out.printf(
                Locale.ROOT,
                "- worker RSS %.1f MiB before, %.1f MiB after; direct memory %d bytes in %d "
                        + "buffers before, %d bytes in %d buffers after; device bytes %d / %d, host bytes %d / %d, files %d /"
                        + " %d%n",
                rssBefore / 1048576.0,
                rssAfter / 1048576.0,
                before.directBytes(),
                before.directCount(),
                after.directBytes(),
                after.directCount(),
                before.deviceBytes(),
                after.deviceBytes(),
                before.hostBytes(),
                after.hostBytes(),
                before.files(),
                after.files());
        System.out.printf(
                Locale.ROOT,
                "- worker heap after a GC: %.1f MiB used of %.1f MiB committed before, "
                        + "%.1f of %.1f after; non-heap committed %.1f / %.1f MiB%n",
                mib(heapBefore.get(0)),
                mib(heapBefore.get(1)),
                mib(heapAfter.get(0)),
                mib(heapAfter.get(1)),
                mib(heapBefore.get(2)),
                mib(heapAfter.get(2)));
        System.out.println("- failures: " + (failures.isEmpty() ? "none" : failures.size()));
        for (String f : failures.subList(0, Math.min(20, failures.size()))) {
            System.out.println("  - " + f);
        }
        System.out.println();
        System.out.println("| batch | attacker connections so far | header mutants so far | batch s | worker RSS MiB "
                + "after | heap committed MiB | heap used MiB (after a GC) | direct bytes after |");
        System.out.println("|---|---|---|---|---|---|---|---|");
        batches.forEach(System.out::println);
    }
}
