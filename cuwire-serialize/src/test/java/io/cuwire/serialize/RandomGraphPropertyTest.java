package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Round trips of random object graphs of estimator-like classes — nested estimators, records, lists, sets, maps,
 * optionals, boxed values, primitive arrays of every size class and NdArrays in every memory kind — over each
 * family chain, compared structurally after a transfer into the receiver's memory. Chains with {@code java} also
 * hold allow-listed values (a list of leaves, NdArrays among them) that only the {@code java} family takes.
 */
class RandomGraphPropertyTest {
    static final class Node {
        String name;
        int depth;
        double weight;
        Object payload;
        List<Object> children = new ArrayList<>();
        Map<String, Object> attributes = new LinkedHashMap<>();
        Optional<Object> extra = Optional.empty();
    }

    record Pair(long id, Object value) {}

    private final List<NdArray> made = new ArrayList<>();
    private int holders;
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> pinned;
    private BufferAllocator<HostBuffer> host;
    private BufferAllocator<DeviceBuffer> rxDevice;
    private BufferAllocator<HostBuffer> rxHost;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("graph-device", BufferAllocator.UNLIMITED);
        pinned = Devices.get(0).newPinnedAllocator("graph-pinned", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("graph-host", BufferAllocator.UNLIMITED);
        rxDevice = Devices.get(Devices.all().size() - 1).newAllocator("graph-rx", BufferAllocator.UNLIMITED);
        rxHost = BufferAllocator.host("graph-rx-host", BufferAllocator.UNLIMITED);
        registry = new TypeRegistry()
                .registerGeneric(Node.class, Family.CUDA, Family.HOST)
                .registerGeneric(Record.class, Family.CUDA, Family.HOST)
                .register(Node.class, "graph.Node")
                .register(Pair.class, "graph.Pair")
                .register(Order.class, "graph.Order")
                .allowJava(Models.Holder.class, Order.class);
    }

    @AfterEach
    void close() {
        made.forEach(NdArray::close);
        for (BufferAllocator<?> a : List.of(device, pinned, host, rxDevice, rxHost)) {
            a.close();
            assertEquals(0, a.allocatedBytes(), a.name());
        }
    }

    private Object leaf(SplittableRandom r) {
        return switch (r.nextInt(16)) {
            case 0 -> null;
            case 1 -> r.nextBoolean();
            case 2 -> r.nextLong();
            case 3 -> r.nextInt();
            case 4 -> (short) r.nextInt();
            case 5 -> (byte) r.nextInt();
            case 6 -> (char) r.nextInt(Character.MAX_VALUE);
            case 7 -> r.nextDouble();
            case 8 -> (float) r.nextDouble();
            case 9 -> "s" + r.nextInt(1000);
            case 10 -> Order.values()[r.nextInt(2)];
            case 11 -> TestRandom.bytes(r, r.nextBoolean() ? r.nextInt(100) : 70_000 + r.nextInt(1000));
            case 12 ->
                r.doubles(r.nextBoolean() ? r.nextInt(10) : 9_000 + r.nextInt(100))
                        .toArray();
            case 13 -> r.ints(r.nextInt(50)).toArray();
            default -> array(r);
        };
    }

    private NdArray array(SplittableRandom r) {
        List<BufferAllocator<?>> memories = List.of(host, pinned, device);
        BufferAllocator<?> memory = memories.get(r.nextInt(memories.size()));
        DType dtype = r.nextBoolean() ? DType.FLOAT32 : DType.INT64;
        NdArray a =
                NdArray.zeros(memory, dtype, r.nextBoolean() ? Order.C : Order.F, 1 + r.nextInt(30), 1 + r.nextInt(30));
        CopyEngine.copyFromSegment(MemorySegment.ofArray(TestRandom.bytes(r, (int) a.byteSize())), a.buffer(), 0);
        made.add(a);
        return a;
    }

    private Object graph(SplittableRandom r, int depth, boolean java) {
        if (depth > 4 || r.nextInt(3) == 0) {
            return leaf(r);
        }
        switch (r.nextInt(java ? 7 : 6)) {
            case 0: {
                Node n = new Node();
                n.name = "n" + r.nextInt(100);
                n.depth = depth;
                n.weight = r.nextDouble();
                n.payload = graph(r, depth + 1, java);
                for (int i = r.nextInt(4); i > 0; i--) {
                    n.children.add(graph(r, depth + 1, java));
                }
                n.attributes.put("a", graph(r, depth + 1, java));
                if (r.nextBoolean()) {
                    Object e = graph(r, depth + 1, java);
                    n.extra = Optional.ofNullable(e);
                }
                return n;
            }
            case 1:
                return new Pair(r.nextLong(), graph(r, depth + 1, java));
            case 2: {
                List<Object> list = new ArrayList<>();
                for (int i = r.nextInt(5); i > 0; i--) {
                    list.add(graph(r, depth + 1, java));
                }
                return list;
            }
            case 3: {
                Map<Object, Object> map = new LinkedHashMap<>();
                for (int i = r.nextInt(4); i > 0; i--) {
                    map.put("k" + i, graph(r, depth + 1, java));
                }
                map.put((long) r.nextInt(), "long key");
                return map;
            }
            case 4: {
                Set<Object> set = new LinkedHashSet<>();
                for (int i = r.nextInt(4); i > 0; i--) {
                    set.add("e" + r.nextInt(1000));
                }
                return set;
            }
            case 5:
                return Optional.of("opt" + r.nextInt(10));
            default: {
                Models.Holder holder = new Models.Holder();
                List<Object> leaves = new ArrayList<>();
                for (int i = 1 + r.nextInt(3); i > 0; i--) {
                    leaves.add(leaf(r));
                }
                holder.inner = leaves;
                holders++;
                return holder;
            }
        }
    }

    private Serialized transfer(Serialized s) {
        Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
        List<Buffer> received = new ArrayList<>();
        for (int i = 0; i < header.frames().size(); i++) {
            long n = header.frames().get(i).length();
            Buffer b = header.frames().get(i).kind() == MemoryKind.DEVICE ? rxDevice.allocate(n) : rxHost.allocate(n);
            CopyEngine.copy(s.frames().get(i).buffer(), b);
            received.add(b);
        }
        return Serialized.received(header, received);
    }

    private static void assertSameGraph(Object a, Object b, String path) {
        if (a == null || b == null) {
            assertEquals(a, b, path);
            return;
        }
        switch (a) {
            case NdArray x -> {
                NdArray y = assertInstanceOf(NdArray.class, b, path);
                assertTrue(x.contentEquals(y), path + ": " + x + " vs " + y);
                assertEquals(x.kind() == MemoryKind.DEVICE, y.kind() == MemoryKind.DEVICE, path + " memory kind");
                y.close();
            }
            case Node x -> {
                Node y = assertInstanceOf(Node.class, b, path);
                assertEquals(x.name, y.name, path);
                assertEquals(x.depth, y.depth, path);
                assertEquals(x.weight, y.weight, path);
                assertSameGraph(x.payload, y.payload, path + ".payload");
                assertSameGraph(x.children, y.children, path + ".children");
                assertSameGraph(x.attributes, y.attributes, path + ".attributes");
                assertSameGraph(x.extra, y.extra, path + ".extra");
            }
            case Models.Holder x -> {
                Models.Holder y = assertInstanceOf(Models.Holder.class, b, path);
                assertSameGraph(x.inner, y.inner, path + ".inner");
            }
            case Pair x -> {
                Pair y = assertInstanceOf(Pair.class, b, path);
                assertEquals(x.id(), y.id(), path);
                assertSameGraph(x.value(), y.value(), path + ".value");
            }
            case List<?> x -> {
                List<?> y = assertInstanceOf(List.class, b, path);
                assertEquals(x.size(), y.size(), path);
                for (int i = 0; i < x.size(); i++) {
                    assertSameGraph(x.get(i), y.get(i), path + "[" + i + "]");
                }
            }
            case Map<?, ?> x -> {
                Map<?, ?> y = assertInstanceOf(Map.class, b, path);
                assertEquals(x.keySet(), y.keySet(), path);
                for (Object k : x.keySet()) {
                    assertSameGraph(x.get(k), y.get(k), path + "[" + k + "]");
                }
            }
            case Optional<?> x -> {
                Optional<?> y = assertInstanceOf(Optional.class, b, path);
                assertEquals(x.isPresent(), y.isPresent(), path);
                if (x.isPresent()) {
                    assertSameGraph(x.get(), y.get(), path + ".get()");
                }
            }
            case byte[] x -> assertArrayEquals(x, (byte[]) b, path);
            case double[] x -> assertArrayEquals(x, (double[]) b, path);
            case int[] x -> assertArrayEquals(x, (int[]) b, path);
            default -> {
                assertEquals(a.getClass(), b.getClass(), path);
                assertEquals(a, b, path);
            }
        }
    }

    @Test
    void shouldRoundTripRandomGraphsOverEveryFamilyChain(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        List<Family[]> chains = List.of(
                new Family[] {Family.CUDA},
                new Family[] {Family.HOST},
                new Family[] {Family.CUDA, Family.HOST},
                new Family[] {Family.CUDA, Family.JAVA},
                new Family[] {Family.HOST, Family.JAVA});
        for (int trial = 0; trial < 250; trial++) {
            Family[] chain = chains.get(trial % chains.size());
            Object value = graph(random, 0, List.of(chain).contains(Family.JAVA));
            try (Serialized s = registry.serialize(value, chain);
                    Serialized wire = transfer(s)) {
                Object back = registry.deserialize(wire, new DecodeTarget(rxDevice, rxHost, Limits.DEFAULT));
                assertSameGraph(value, back, "trial " + trial + " root");
            }
        }
        assertTrue(holders > 10, "the java chains carried java-only values: " + holders);
    }
}
