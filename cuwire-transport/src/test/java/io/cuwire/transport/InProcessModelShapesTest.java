package io.cuwire.transport;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The model-shape suite over the in-process transport: the peer runs on a thread of this JVM, with its own registry
 * and its own copies of the generated classes (another class loader), as a second JVM would have.
 */
class InProcessModelShapesTest extends ModelShapeConformanceSuite {
    @Override
    protected Transport transport() {
        return Transports.inProcess();
    }

    @Override
    protected String listenAddress() {
        return "inproc://model-shapes";
    }

    @Override
    protected TransportConformanceSuite.Peer startPeer(String... args) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        CompletableFuture<Integer> exit = new CompletableFuture<>();
        Thread thread = Thread.ofPlatform().daemon().name("model-shape-peer").start(() -> {
            try {
                exit.complete(ModelShapePeer.run(args, out));
            } catch (Throwable t) {
                t.printStackTrace(out);
                exit.complete(9);
            }
        });
        return new TransportConformanceSuite.Peer() {
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
        };
    }
}
