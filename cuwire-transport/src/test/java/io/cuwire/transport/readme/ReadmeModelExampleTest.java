package io.cuwire.transport.readme;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Message;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's "Serialize your own model" example: {@link Embedding} and the block between this test's markers are
 * the README's two code blocks verbatim; it compiles and runs here.
 */
class ReadmeModelExampleTest {
    private static final Path DIR = Path.of("src/test/java/io/cuwire/transport/readme");
    private static final Path README = Path.of("../README.md");
    private static final String SECTION = "## Serialize your own model";

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldSendAModelOfOnesOwnAsTheReadmeShows() throws Exception {
        byte[] secret = "an example secret, 32 bytes long".getBytes(StandardCharsets.US_ASCII);
        float[] w = new float[100_000];
        for (int i = 0; i < w.length; i++) {
            w[i] = i % 7 - 3;
        }
        Embedding copy;
        try (BufferAllocator<DeviceBuffer> device =
                        Devices.get(0).newAllocator("example-device", BufferAllocator.UNLIMITED);
                BufferAllocator<HostBuffer> host = BufferAllocator.host("example-host", BufferAllocator.UNLIMITED);
                ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
                NdArray projection = NdArray.fromArray(device, new float[] {1, 0, 0, 1}, 2, 2)) {
            Embedding model = new Embedding(
                    "words", w, Embedding.Metric.COSINE, new TreeMap<>(Map.of("cat", 1, "dog", 2)), projection);
            // README send begin
            TypeRegistry registry = new TypeRegistry() // the same registrations in both processes
                    .registerGeneric(Embedding.class, Family.CUDA, Family.HOST)
                    .register(Embedding.class)
                    .register(Embedding.Metric.class, "example.Metric");
            TransportConfig config = TransportConfig.builder()
                    .secret(secret) // shared by both processes
                    .receiveInto(DeviceMap.of(host, device)) // where received frames land
                    .build();
            try (Listener listener = Transports.tcp().listen("tcp://127.0.0.1:0", config)) {
                // The worker's side: another JVM in practice, a thread here.
                Future<Embedding> received = executor.submit(() -> {
                    try (Connection c = listener.accept();
                            ReceivedMessage m = c.receive()) {
                        return registry.deserialize(m.value(), Embedding.class, new DecodeTarget(device, host));
                    }
                });
                // The client's side.
                try (Connection c = Transports.tcp().connect(listener.address(), config);
                        Serialized s = registry.serialize(model, c.families().toArray(Family[]::new))) {
                    c.send(Message.of(s)).join(); // the frames are the arrays: keep them until sent
                }
                copy = received.get();
            }
            // README send end
            try {
                assertEquals("words", copy.name);
                assertArrayEquals(w, copy.weights);
                assertNotSame(w, copy.weights);
                assertEquals(Embedding.Metric.COSINE, copy.metric);
                assertInstanceOf(TreeMap.class, copy.vocabulary);
                assertEquals(Map.of("cat", 1, "dog", 2), copy.vocabulary);
                assertEquals(MemoryKind.DEVICE, copy.projection.kind());
                assertArrayEquals(new float[] {1, 0, 0, 1}, copy.projection.toFloatArray());
                assertEquals(model.norm, copy.norm, "postDeserialize rebuilt the transient field");
            } finally {
                copy.projection.close();
            }
        }
    }

    @Test
    void shouldBeTheCodeTheReadmeShows() throws IOException {
        Assumptions.assumeTrue(
                Files.exists(DIR) && Files.exists(README),
                "compares source files: runs from the cuwire-transport module of a checkout, not from the GPU bundle");
        List<List<String>> blocks = readmeBlocks();
        assertEquals(2, blocks.size(), "the README's " + SECTION + " section has two java blocks");
        assertEquals(
                String.join("\n", marked(DIR.resolve("Embedding.java"), "model")),
                String.join("\n", blocks.get(0)),
                "README's model class differs from Embedding.java's");
        assertEquals(
                String.join("\n", marked(DIR.resolve("ReadmeModelExampleTest.java"), "send")),
                String.join("\n", blocks.get(1)),
                "README's send block differs from this test's");
    }

    /** The non-blank lines of {@code file} between {@code // README <name> begin} and {@code end}, stripped. */
    private static List<String> marked(Path file, String name) throws IOException {
        List<String> code = new ArrayList<>();
        boolean in = false;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            if (line.strip().equals("// README " + name + " end")) {
                break;
            }
            if (in && !line.isBlank()) {
                code.add(line.strip());
            }
            in |= line.strip().equals("// README " + name + " begin");
        }
        return code;
    }

    /** The non-blank lines of each java block of the README's section, stripped. */
    private static List<List<String>> readmeBlocks() throws IOException {
        List<List<String>> blocks = new ArrayList<>();
        List<String> block = null;
        boolean in = false;
        for (String line : Files.readAllLines(README, StandardCharsets.UTF_8)) {
            if (line.startsWith("## ")) {
                in = line.equals(SECTION);
            } else if (in && line.startsWith("```java")) {
                block = new ArrayList<>();
            } else if (in && block != null && line.startsWith("```")) {
                blocks.add(block);
                block = null;
            } else if (in && block != null && !line.isBlank()) {
                block.add(line.strip());
            }
        }
        return blocks;
    }
}
