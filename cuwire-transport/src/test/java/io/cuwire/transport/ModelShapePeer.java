package io.cuwire.transport;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The other side of {@link ModelShapeConformanceSuite}: defines the same generated model classes as the test (same
 * seed and count), registers them in a registry of its own, connects twice — once offering {@code cuda, host}, once
 * {@code host} — and on each connection decodes every message, serializes the value again with the connection's
 * chain and sends it back. A value it cannot decode or encode comes back as a string starting with
 * {@link #FAILED}, so the test fails with the peer's reason instead of waiting. A connection that breaks (the test
 * closes one that failed in the middle of a message) is made again; {@link #BYE} ends one for good. Arguments:
 * {@code address secretHex seed classes}. Exit code 0 once both chains said bye (or the listener went away) and its
 * allocators are back to zero. Runs in a child JVM ({@link #main}) or on a thread of the test's JVM ({@link #run}),
 * where it defines the classes in a class loader of its own all the same.
 */
public final class ModelShapePeer {
    /** How a reply that is a failure starts. */
    static final String FAILED = "peer failed: ";

    /** The message (a string) after which the peer closes that connection for good. */
    static final String BYE = "model-shape-peer: bye";

    /** The chains the peer connects with, in order. */
    static final List<List<Family>> CHAINS = List.of(List.of(Family.CUDA, Family.HOST), List.of(Family.HOST));

    private ModelShapePeer() {}

    public static void main(String[] args) {
        int code;
        try {
            code = run(args, System.out);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            code = 9;
        }
        System.out.flush();
        System.exit(code);
    }

    /** Runs the peer until the test closes both connections; its exit code. */
    public static int run(String[] args, PrintStream out) throws Exception {
        String address = args[0];
        byte[] secret = HexFormat.of().parseHex(args[1]);
        long seed = Long.parseLong(args[2]);
        int classes = Integer.parseInt(args[3]);
        ModelShapes.Generated generated =
                ModelShapes.generate(seed, classes, ModelShapeConformanceSuite.unsupportedFeatures());
        BufferAllocator<HostBuffer> host = BufferAllocator.host("model-peer-host", BufferAllocator.UNLIMITED);
        BufferAllocator<HostBuffer> pinned =
                Devices.get(0).newPinnedAllocator("model-peer-pinned", BufferAllocator.UNLIMITED);
        BufferAllocator<DeviceBuffer> device =
                Devices.get(0).newAllocator("model-peer-device", BufferAllocator.UNLIMITED);
        BufferAllocator<HostBuffer> copies = BufferAllocator.host("model-peer-copies", BufferAllocator.UNLIMITED);
        TypeRegistry registry =
                generated.register(new TypeRegistry(Limits.DEFAULT, ModelShapes.FRAME_THRESHOLD, copies));
        DecodeTarget target = new DecodeTarget(device, host, Limits.DEFAULT);
        Transport transport = Transports.forAddress(address);
        List<CompletableFuture<Integer>> served = new ArrayList<>();
        for (List<Family> chain : CHAINS) {
            TransportConfig config = TransportConfig.builder()
                    .secret(secret)
                    .ioTimeout(Duration.ofSeconds(20))
                    .families(chain.toArray(Family[]::new))
                    .receiveInto(DeviceMap.of(host, device).withPinned(pinned))
                    .build();
            CompletableFuture<Integer> done = new CompletableFuture<>();
            Thread.ofPlatform().daemon().name("model-peer-" + chain).start(() -> {
                try {
                    done.complete(serveChain(transport, address, config, registry, target, out));
                } catch (Throwable t) {
                    t.printStackTrace(out);
                    done.complete(8);
                }
            });
            served.add(done);
        }
        int code = 0;
        for (CompletableFuture<Integer> f : served) {
            code = Math.max(code, f.get());
        }
        if (code != 0) {
            return code;
        }
        try {
            for (BufferAllocator<?> a : List.of(host, pinned, device, copies)) {
                a.close();
            }
        } catch (RuntimeException e) {
            out.println("leak: " + e.getMessage());
            return 3;
        }
        return 0;
    }

    /** Connects with {@code config}'s chain and serves, again after each break, until bye; its exit code. */
    private static int serveChain(
            Transport transport,
            String address,
            TransportConfig config,
            TypeRegistry registry,
            DecodeTarget target,
            PrintStream out) {
        for (int connects = 0; ; connects++) {
            Connection c;
            try {
                c = transport.connect(address, config);
            } catch (TransportException e) {
                if (connects == 0) {
                    e.printStackTrace(out);
                    return 7;
                }
                return 0;
            }
            try (c) {
                if (serve(c, registry, target)) {
                    return 0;
                }
            }
        }
    }

    /** Serves {@code c} until it closes (false) or says bye (true). */
    private static boolean serve(Connection c, TypeRegistry registry, DecodeTarget target) {
        Family[] chain = c.families().toArray(Family[]::new);
        while (true) {
            try (ReceivedMessage m = c.receive()) {
                List<NdArray> arrays = List.of();
                Serialized reply;
                try {
                    Object value = registry.deserialize(m.value(), target);
                    if (BYE.equals(value)) {
                        return true;
                    }
                    arrays = ModelValues.ndArraysIn(value);
                    reply = registry.serialize(value, chain);
                } catch (RuntimeException e) {
                    arrays.forEach(NdArray::close);
                    arrays = List.of();
                    StringWriter trace = new StringWriter();
                    e.printStackTrace(new PrintWriter(trace));
                    reply = registry.serialize(FAILED + trace, chain);
                }
                try {
                    c.send(Message.of(reply)).join();
                } catch (CompletionException e) {
                    return false;
                } finally {
                    reply.close();
                    arrays.forEach(NdArray::close);
                }
            } catch (TransportException e) {
                return false;
            }
        }
    }
}
