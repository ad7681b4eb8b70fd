package io.cuwire.transport;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A {@link ConformancePeer} on a thread of this JVM: the peer of transports within one process. */
final class ThreadPeer implements TransportConformanceSuite.Peer {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final CompletableFuture<Integer> exit = new CompletableFuture<>();
    private final Thread thread;

    private ThreadPeer(String... args) {
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        thread = Thread.ofPlatform()
                .daemon()
                .name("conformance-peer-" + args[0])
                .start(() -> {
                    try {
                        exit.complete(ConformancePeer.run(args, out, false));
                    } catch (Throwable t) {
                        t.printStackTrace(out);
                        exit.complete(9);
                    }
                });
    }

    /** Starts {@link ConformancePeer#run} with {@code args} on a daemon thread. */
    static ThreadPeer start(String... args) {
        return new ThreadPeer(args);
    }

    @Override
    public int await(Duration timeout) throws Exception {
        return exit.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public String output() {
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
