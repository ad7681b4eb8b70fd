package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The values of the wire-format fixtures (headers written by one format version, decoded by later code) and their
 * registry. Their classes, registered names and contents must not change: files under
 * {@code src/test/resources/fixtures/} were written from them, and a later reader must rebuild equal values.
 *
 * <p>A fixture {@code NAME} is two files: {@code NAME.header}, the encoded header, and {@code NAME.frames}, every
 * frame's bytes in header order (the header's descriptors give the lengths).
 */
final class WireFixtures {
    /** The fixtures of format version 1, in the order they are written. */
    static final List<String> NAMES = List.of("generic", "ndarray-cuda", "ndarray-host", "refs");
    /** The fixtures of format version 2 on: version 1's and {@code layers}. */
    static final List<String> NAMES_V2 = List.of("generic", "ndarray-cuda", "ndarray-host", "refs", "layers");

    /** The fixtures kept of {@code version} (1 or 2). */
    static List<String> names(int version) {
        return version == 1 ? NAMES : NAMES_V2;
    }

    private WireFixtures() {}

    enum Kind {
        ALPHA,
        BETA,
        GAMMA
    }

    /** A model with a field of every kind the generic serializer writes. */
    static final class Model {
        int count;
        long big;
        double ratio;
        float rate;
        boolean on;
        short small;
        byte tiny;
        char letter;
        String name;
        String absent;
        Kind kind;
        Integer boxed;
        Long boxedLong;
        int[] ids;
        float[] weights;
        double[] bias;
        boolean[] mask;
        Inner inner;
        List<Object> history;
        Map<String, Object> extras;
        Set<Object> tags;
        Optional<String> label;
        Optional<Object> none;
        Point[] points;
        Object anything;

        @Override
        public boolean equals(Object o) {
            return o instanceof Model m
                    && count == m.count
                    && big == m.big
                    && Double.compare(ratio, m.ratio) == 0
                    && Float.compare(rate, m.rate) == 0
                    && on == m.on
                    && small == m.small
                    && tiny == m.tiny
                    && letter == m.letter
                    && Objects.equals(name, m.name)
                    && Objects.equals(absent, m.absent)
                    && kind == m.kind
                    && Objects.equals(boxed, m.boxed)
                    && Objects.equals(boxedLong, m.boxedLong)
                    && Arrays.equals(ids, m.ids)
                    && Arrays.equals(weights, m.weights)
                    && Arrays.equals(bias, m.bias)
                    && Arrays.equals(mask, m.mask)
                    && Objects.equals(inner, m.inner)
                    && Objects.equals(history, m.history)
                    && Objects.equals(extras, m.extras)
                    && Objects.equals(tags, m.tags)
                    && Objects.equals(label, m.label)
                    && Objects.equals(none, m.none)
                    && Arrays.equals(points, m.points)
                    && Objects.deepEquals(anything, m.anything);
        }

        @Override
        public int hashCode() {
            return Objects.hash(count, name, Arrays.hashCode(weights));
        }
    }

    /** A nested value. */
    static final class Inner {
        String note;
        long[] counts;
        Inner next;

        @Override
        public boolean equals(Object o) {
            return o instanceof Inner i
                    && Objects.equals(note, i.note)
                    && Arrays.equals(counts, i.counts)
                    && Objects.equals(next, i.next);
        }

        @Override
        public int hashCode() {
            return Objects.hash(note, Arrays.hashCode(counts));
        }
    }

    record Point(double x, double y, String tag) {}

    /** Values that appear twice: the header writes the second occurrence as a back-reference. */
    static final class Shared {
        Inner first;
        Inner second;
        double[] p;
        double[] q;
        List<Object> l1;
        List<Object> l2;
        Point point;
        Object[] both;
    }

    /**
     * The registry the fixtures are written and read with. A frame threshold of 1 KiB keeps the files small while
     * the larger arrays still travel as frames.
     */
    static TypeRegistry registry(BufferAllocator<HostBuffer> hostCopies) {
        return new TypeRegistry(Limits.DEFAULT, 1024, hostCopies)
                .registerGeneric(Model.class, Family.CUDA, Family.HOST)
                .registerGeneric(Inner.class, Family.CUDA, Family.HOST)
                .registerGeneric(Shared.class, Family.CUDA, Family.HOST)
                .registerGeneric(Record.class, Family.CUDA, Family.HOST)
                .register(Model.class, "fixture.Model")
                .register(Inner.class, "fixture.Inner")
                .register(Shared.class, "fixture.Shared")
                .register(Point.class, "fixture.Point")
                .register(Kind.class, "fixture.Kind");
    }

    static Model model() {
        Model m = new Model();
        m.count = 42;
        m.big = 1L << 40;
        m.ratio = 0.125;
        m.rate = 1.5f;
        m.on = true;
        m.small = -300;
        m.tiny = -7;
        m.letter = 'q';
        m.name = "wire-fixture";
        m.absent = null;
        m.kind = Kind.BETA;
        m.boxed = 5;
        m.boxedLong = -9L;
        m.ids = new int[] {3, 1, 4, 1, 5, 9};
        m.weights = new float[512];
        for (int i = 0; i < m.weights.length; i++) {
            m.weights[i] = i * 0.25f - 3;
        }
        m.bias = new double[] {0.5, -0.5};
        m.mask = new boolean[] {true, false, true};
        m.inner = new Inner();
        m.inner.note = "outer";
        m.inner.counts = new long[] {10, 20};
        m.inner.next = new Inner();
        m.inner.next.note = "innermost";
        m.history = new ArrayList<>(List.of(1, 2L, 3.0f, 4.0, "five", Kind.GAMMA, List.of("a", "b")));
        m.history.add(null);
        m.extras = new LinkedHashMap<>();
        m.extras.put("alpha", 0.1);
        m.extras.put("nested", Map.of("k", 7L));
        m.extras.put("short", (short) 12);
        m.tags = new LinkedHashSet<>(List.of("x", "y", 'z'));
        m.label = Optional.of("labelled");
        m.none = Optional.empty();
        m.points = new Point[] {new Point(1, 2, "p"), null, new Point(-1, 0.5, null)};
        m.anything = new String[] {"any", "thing"};
        return m;
    }

    /** A float32 array on {@code device}, for the {@code cuda} fixture. */
    static NdArray cudaArray(BufferAllocator<DeviceBuffer> device) {
        float[] data = new float[64 * 8];
        for (int i = 0; i < data.length; i++) {
            data[i] = (float) Math.sin(i);
        }
        return NdArray.fromArray(device, data, 64, 8);
    }

    /** A float64 array in F order on {@code device}, for the {@code host} fixture. */
    static NdArray hostArray(BufferAllocator<DeviceBuffer> device) {
        NdArray a = NdArray.empty(device, DType.FLOAT64, Order.F, 5, 3);
        double[] data = new double[15];
        for (int i = 0; i < data.length; i++) {
            data[i] = i * i - 0.5;
        }
        CopyEngine.copyFromSegment(MemorySegment.ofArray(data), a.buffer(), a.byteOffset());
        return a;
    }

    /**
     * A list of {@value #LAYERS} device arrays, for the {@code layers} fixture (a model held as a list of layers): ten
     * float32 arrays of shape {@code [i + 1, 4]} in C order, then two int64 arrays of 3 elements.
     */
    static List<NdArray> layers(BufferAllocator<DeviceBuffer> device) {
        List<NdArray> layers = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            float[] data = new float[(i + 1) * 4];
            for (int k = 0; k < data.length; k++) {
                data[k] = i * 100 + k * 0.5f;
            }
            layers.add(NdArray.fromArray(device, data, i + 1, 4));
        }
        layers.add(NdArray.fromArray(device, new long[] {7, -8, 9}, 3));
        layers.add(NdArray.fromArray(device, new long[] {1L << 40, 0, -1}, 3));
        return layers;
    }

    /** Arrays of {@link #layers}. */
    static final int LAYERS = 12;

    static Shared shared() {
        Shared s = new Shared();
        s.first = new Inner();
        s.first.note = "shared";
        s.first.counts = new long[] {1, 2, 3};
        s.second = s.first;
        s.p = new double[] {2.5, 3.5};
        s.q = s.p;
        s.l1 = new ArrayList<>(List.of("same", "list"));
        s.l2 = s.l1;
        s.point = new Point(3, 4, "shared point");
        s.both = new Object[] {s.point, s.point, s.first};
        return s;
    }

    /** Writes {@code value} as fixture {@code name} in {@code dir}. */
    static void write(Path dir, String name, Serialized value) {
        try {
            Files.write(dir.resolve(name + ".header"), value.encodeHeader());
            long total = value.totalFrameBytes();
            byte[] frames = new byte[Math.toIntExact(total)];
            long at = 0;
            for (Frame f : value.frames()) {
                CopyEngine.copyToSegment(
                        f.buffer(), 0, MemorySegment.ofArray(frames).asSlice(at, f.length()));
                at += f.length();
            }
            Files.write(dir.resolve(name + ".frames"), frames);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The bytes of format version {@code version}'s fixture file {@code file} (e.g. {@code generic.header}), read from
     * the class path ({@code fixtures/v<version>/}): from the module's test resources or from a test jar (the GPU
     * bundle runs the tests from jars, where a {@code Path} of the resource folder does not exist).
     */
    static byte[] resource(int version, String file) {
        String path = "/fixtures/v" + version + "/" + file;
        try (java.io.InputStream in = WireFixtures.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("fixture file " + path + " is not on the class path");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Reads format version {@code version}'s fixture {@code name} from the class path as a receiver would: parses the
     * header, allocates each frame as its descriptor says (device frames from {@code device}) and fills it.
     */
    static Serialized read(
            int version, String name, BufferAllocator<HostBuffer> host, BufferAllocator<DeviceBuffer> device) {
        byte[] header = resource(version, name + ".header");
        byte[] frames = resource(version, name + ".frames");
        Serialized value = received(header, frames, host, device, Limits.DEFAULT);
        if (value.totalFrameBytes() != frames.length) {
            long described = value.totalFrameBytes();
            value.close();
            throw new IllegalStateException("fixture " + name + " has " + frames.length + " frame bytes, its header "
                    + "describes " + described);
        }
        return value;
    }

    /**
     * A received value of {@code header} over {@code frames}, allocated and filled as a receiver would: each frame
     * as its descriptor says, filled from {@code frames} in order as far as they go (the rest left as allocated).
     */
    static Serialized received(
            byte[] header,
            byte[] frames,
            BufferAllocator<HostBuffer> host,
            BufferAllocator<DeviceBuffer> device,
            Limits limits) {
        Serialized.Header parsed = Serialized.parseHeader(header, limits);
        List<Buffer> buffers = new ArrayList<>();
        try {
            long at = 0;
            for (FrameDescriptor d : parsed.frames()) {
                Buffer b = d.kind() == MemoryKind.DEVICE ? device.allocate(d.length()) : host.allocate(d.length());
                buffers.add(b);
                long n = Math.max(0, Math.min(d.length(), frames.length - at));
                CopyEngine.copyFromSegment(MemorySegment.ofArray(frames).asSlice(at, n), b, 0);
                at += n;
            }
            return Serialized.received(parsed, buffers);
        } catch (RuntimeException e) {
            buffers.forEach(Buffer::close);
            throw e;
        }
    }
}
