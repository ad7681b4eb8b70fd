package io.cuwire.ml.modelfile;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.ml.Estimator;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A model file: an estimator's class, parameters, scalar attributes and arrays, in the pickle-free format of
 * {@code docs/model-file.md} that {@code cuwire_sklearn.py} (a resource beside this class) writes from a fitted
 * scikit-learn estimator and reads back into one. {@link #read} checks the container — magic, format version, header
 * keys, every array's dtype, shape and place in the file — against the file's length and a size limit before it
 * allocates anything; {@link #toEstimator} checks the content against what the estimator needs. Every refusal is a
 * {@link ModelFileException} naming the field.
 *
 * <pre>
 * bytes 0-7     magic "CWMODEL\0"
 * bytes 8-15    header length H, uint64 little-endian (at most {@value #MAX_HEADER_BYTES})
 * bytes 16..    the header: H bytes of UTF-8 JSON, then zeros to a multiple of 8
 * then          the arrays, each at its offset from there (a multiple of 8): little-endian, C order
 * </pre>
 *
 * Immutable; the arrays are on the Java heap, as doubles (integer dtypes are exact: the reader refuses an integer
 * beyond 2^53).
 */
public final class ModelFile {
    /** The format version this reader and writer know. */
    public static final int FORMAT_VERSION = 1;

    /** The largest file {@link #read(Path)} reads: 1 GiB. */
    public static final long DEFAULT_MAX_BYTES = 1L << 30;

    /** The largest header. */
    public static final long MAX_HEADER_BYTES = 16L << 20;

    /** The Python helper's file name, a resource beside this class. */
    public static final String HELPER = "cuwire_sklearn.py";

    static final byte[] MAGIC = "CWMODEL\0".getBytes(StandardCharsets.US_ASCII);
    private static final int PREFIX = 16;
    private static final int MAX_RANK = 8;
    private static final long MAX_ELEMENTS = Integer.MAX_VALUE - 8;
    private static final double MAX_EXACT = 0x1p53;
    private static final Set<String> KEYS =
            Set.of("format_version", "estimator", "producer", "params", "attributes", "arrays");
    private static final Set<String> ARRAY_KEYS = Set.of("dtype", "shape", "offset");
    private static final List<DType> DTYPES = List.of(DType.FLOAT64, DType.FLOAT32, DType.INT64, DType.INT32);

    /**
     * One array of the file.
     *
     * @param name its name: a scikit-learn attribute ({@code coef_}) or a forest array ({@code children_left})
     * @param dtype float64, float32, int64 or int32
     * @param shape its shape; {@code []} for a scalar
     * @param values its elements in C order
     */
    public record Array(String name, DType dtype, long[] shape, double[] values) {
        public Array {
            Objects.requireNonNull(name, "name");
            if (!DTYPES.contains(dtype)) {
                throw new IllegalArgumentException(
                        "array " + name + " of dtype " + dtype + " (expected: " + DTYPES + ")");
            }
            shape = shape.clone();
            if (Arrays.stream(shape).reduce(1, Math::multiplyExact) != values.length) {
                throw new IllegalArgumentException("array " + name + " of shape " + ModelFile.shapeText(shape) + " has "
                        + values.length + " values");
            }
        }

        /** The shape, NumPy style: {@code (3, 2)}, {@code (3,)}, {@code ()}. */
        public String shapeText() {
            return ModelFile.shapeText(shape);
        }

        @Override
        public long[] shape() {
            return shape.clone();
        }
    }

    private final String estimator;
    private final String producer;
    private final Map<String, Object> params;
    private final Map<String, Object> attributes;
    private final Map<String, Array> arrays;

    /**
     * A model file's content.
     *
     * @param estimator the estimator's scikit-learn class name ({@code LinearRegression})
     * @param producer what wrote it ({@code scikit-learn 1.2.1}, {@code cuwire})
     * @param params hyper-parameters by scikit-learn name: strings, numbers, booleans, null
     * @param attributes fitted scalars by scikit-learn name ({@code n_features_in_}, {@code inertia_})
     * @param arrays the fitted arrays, names unique
     */
    public ModelFile(
            String estimator,
            String producer,
            Map<String, Object> params,
            Map<String, Object> attributes,
            List<Array> arrays) {
        this.estimator = Objects.requireNonNull(estimator, "estimator");
        this.producer = Objects.requireNonNull(producer, "producer");
        this.params = Collections.unmodifiableMap(new LinkedHashMap<>(params));
        this.attributes = Collections.unmodifiableMap(new LinkedHashMap<>(attributes));
        Map<String, Array> m = new LinkedHashMap<>();
        for (Array a : arrays) {
            if (m.put(a.name(), a) != null) {
                throw new IllegalArgumentException("array " + a.name() + " twice");
            }
        }
        this.arrays = Collections.unmodifiableMap(m);
    }

    /** The estimator's scikit-learn class name. */
    public String estimator() {
        return estimator;
    }

    /** What wrote the file. */
    public String producer() {
        return producer;
    }

    /** The hyper-parameters by scikit-learn name. */
    public Map<String, Object> params() {
        return params;
    }

    /** The fitted scalars by scikit-learn name. */
    public Map<String, Object> attributes() {
        return attributes;
    }

    /** The arrays by name, in file order. */
    public Map<String, Array> arrays() {
        return arrays;
    }

    /** The estimators {@link #toEstimator} builds. */
    public static List<String> estimators() {
        return SklearnModels.ESTIMATORS;
    }

    /**
     * The fitted cuwire estimator this file describes, its arrays in {@code mem} (any device) as {@code dtype}
     * (float32 or float64); the caller owns it.
     *
     * @throws ModelFileException naming the field, for an unknown estimator or array, a missing one, a shape that
     *     disagrees with another, a NaN or infinity, a tree whose child points outside it, a parameter cuwire cannot
     *     honour
     */
    public Estimator toEstimator(BufferAllocator<?> mem, DType dtype) {
        return SklearnModels.build(this, mem, dtype);
    }

    /**
     * The file of fitted estimator {@code e}, for scikit-learn to rebuild ({@code cuwire_sklearn.load}).
     *
     * <p>A forest's trees are written in cuwire's node numbering with its thresholds unchanged: scikit-learn's rebuilt
     * forest predicts what cuwire does on every row that float32 holds exactly (scikit-learn casts rows to float32).
     *
     * @throws ModelFileException if {@code e}'s kind has no file form (one not in {@link #estimators()}) or it is not
     *     fitted
     */
    public static ModelFile of(Estimator e) {
        return SklearnModels.describe(e);
    }

    /**
     * The text of {@code cuwire_sklearn.py}, the Python helper that writes these files from scikit-learn and rebuilds
     * scikit-learn estimators from them (NumPy and json only).
     */
    public static String sklearnHelper() {
        try (var in = ModelFile.class.getResourceAsStream(HELPER)) {
            if (in == null) {
                throw new IllegalStateException("resource " + HELPER + " is missing beside " + ModelFile.class);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // ---------------------------------------------------------------- reading

    /** Reads {@code path}, at most {@link #DEFAULT_MAX_BYTES} long. */
    public static ModelFile read(Path path) throws IOException {
        return read(path, DEFAULT_MAX_BYTES);
    }

    /**
     * Reads {@code path}, refusing a file longer than {@code maxBytes}. Every declared size is checked against the
     * file's length before an array is allocated, so nothing larger than the file (twice it for float32 arrays, which
     * become doubles) is allocated.
     *
     * @throws ModelFileException naming the field, for a file that is not a model file, of another format version,
     *     or whose header is malformed, unknown or inconsistent with the file's length
     * @throws IOException if the file cannot be read
     */
    public static ModelFile read(Path path, long maxBytes) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size > maxBytes) {
                throw new ModelFileException(
                        "file", size + " bytes (expected: at most " + maxBytes + ", the reader's limit)");
            }
            if (size < PREFIX) {
                throw new ModelFileException("file", size + " bytes (expected: at least " + PREFIX + ")");
            }
            ByteBuffer prefix = readAt(ch, 0, PREFIX);
            byte[] magic = new byte[MAGIC.length];
            prefix.get(0, magic);
            if (!Arrays.equals(magic, MAGIC)) {
                throw new ModelFileException(
                        "magic",
                        "bytes " + Arrays.toString(magic) + " (expected: \"CWMODEL\\0\", " + "a cuwire model file)");
            }
            long headerBytes = prefix.getLong(8);
            if (headerBytes < 2 || headerBytes > MAX_HEADER_BYTES || headerBytes > size - PREFIX) {
                throw new ModelFileException(
                        "header_length",
                        Long.toUnsignedString(headerBytes) + " (expected: 2 .. "
                                + Math.min(MAX_HEADER_BYTES, size - PREFIX) + ", within the limit and the file)");
            }
            String text;
            try {
                text = StandardCharsets.UTF_8
                        .newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(readAt(ch, PREFIX, (int) headerBytes))
                        .toString();
            } catch (CharacterCodingException e) {
                throw new ModelFileException("header", "not UTF-8 (" + e.getMessage() + ")");
            }
            if (!(ModelJson.parse(text) instanceof Map<?, ?> raw)) {
                throw new ModelFileException("header", "not a JSON object");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> header = (Map<String, Object>) raw;
            return parse(ch, header, PREFIX + align(headerBytes), size);
        }
    }

    private static ModelFile parse(FileChannel ch, Map<String, Object> h, long start, long size) throws IOException {
        for (String key : h.keySet()) {
            if (!KEYS.contains(key)) {
                throw new ModelFileException(key, "an unknown header key (expected: " + sorted(KEYS) + ")");
            }
        }
        Object version = h.get("format_version");
        if (!(version instanceof Long v)) {
            throw new ModelFileException("format_version", version + " (expected: an integer)");
        }
        if (v != FORMAT_VERSION) {
            throw new ModelFileException(
                    "format_version",
                    v + " (expected: " + FORMAT_VERSION
                            + (v > FORMAT_VERSION ? "; the file is newer than this reader" : "") + ")");
        }
        String estimator = string(h, "estimator");
        String producer = h.containsKey("producer") ? string(h, "producer") : "";
        Map<String, Object> params = object(h, "params");
        Map<String, Object> attributes = object(h, "attributes");
        for (Map.Entry<String, Object> e : attributes.entrySet()) {
            if (e.getValue() instanceof Map || e.getValue() instanceof List) {
                throw new ModelFileException(
                        "attributes." + e.getKey(),
                        "a JSON " + kind(e.getValue())
                                + " (expected: a number, string, boolean or null; arrays go in 'arrays')");
            }
        }
        Map<String, Object> entries = object(h, "arrays");
        List<Declared> declared = new ArrayList<>();
        for (Map.Entry<String, Object> e : entries.entrySet()) {
            String where = "arrays." + e.getKey();
            if (!(e.getValue() instanceof Map<?, ?> m)) {
                throw new ModelFileException(where, "a JSON " + kind(e.getValue()) + " (expected: an object)");
            }
            for (Object key : m.keySet()) {
                if (!ARRAY_KEYS.contains(key)) {
                    throw new ModelFileException(
                            where + "." + key, "an unknown key (expected: " + sorted(ARRAY_KEYS) + ")");
                }
            }
            DType dtype = null;
            for (DType t : DTYPES) {
                if (t.wireName().equals(m.get("dtype"))) {
                    dtype = t;
                }
            }
            if (dtype == null) {
                throw new ModelFileException(
                        where + ".dtype", m.get("dtype") + " (expected: one of float64, float32, " + "int64, int32)");
            }
            if (!(m.get("shape") instanceof List<?> dims) || dims.size() > MAX_RANK) {
                throw new ModelFileException(
                        where + ".shape", m.get("shape") + " (expected: a list of at most " + MAX_RANK + " sizes)");
            }
            long[] shape = new long[dims.size()];
            long count = 1;
            for (int i = 0; i < shape.length; i++) {
                if (!(dims.get(i) instanceof Long d) || d < 0) {
                    throw new ModelFileException(where + ".shape", dims + " (expected: sizes >= 0)");
                }
                shape[i] = d;
                count = count == 0 || d == 0 ? 0 : (d > MAX_ELEMENTS / count ? MAX_ELEMENTS + 1 : count * d);
            }
            if (!(m.get("offset") instanceof Long offset) || offset < 0 || offset % 8 != 0) {
                throw new ModelFileException(where + ".offset", m.get("offset") + " (expected: a multiple of 8, >= 0)");
            }
            long room = size - start;
            if (count > MAX_ELEMENTS || offset > room || count * dtype.byteSize() > room - offset) {
                throw new ModelFileException(
                        where,
                        "shape " + shapeText(shape) + " of " + dtype.wireName() + " at offset " + offset
                                + " (expected: within the " + room + " bytes after the header)");
            }
            declared.add(new Declared(e.getKey(), dtype, shape, offset, count));
        }
        List<Declared> byOffset = new ArrayList<>(declared);
        byOffset.sort(Comparator.comparingLong(Declared::offset));
        for (int i = 1; i < byOffset.size(); i++) {
            Declared a = byOffset.get(i - 1);
            if (a.offset() + a.count() * a.dtype().byteSize() > byOffset.get(i).offset()) {
                throw new ModelFileException(
                        "arrays." + byOffset.get(i).name() + ".offset",
                        byOffset.get(i).offset() + " (expected: after the end of arrays." + a.name() + ")");
            }
        }
        List<Array> arrays = new ArrayList<>();
        for (Declared d : declared) {
            arrays.add(new Array(d.name(), d.dtype(), d.shape(), values(ch, start, d)));
        }
        return new ModelFile(estimator, producer, params, attributes, arrays);
    }

    /** An array as the header declares it, checked against the file's length. */
    private record Declared(String name, DType dtype, long[] shape, long offset, long count) {}

    private static double[] values(FileChannel ch, long start, Declared d) throws IOException {
        double[] v = new double[(int) d.count()];
        int es = d.dtype().byteSize();
        int chunk = (1 << 20) / es;
        for (int first = 0; first < v.length; first += chunk) {
            int n = Math.min(chunk, v.length - first);
            ByteBuffer b = readAt(ch, start + d.offset() + (long) first * es, n * es);
            for (int i = 0; i < n; i++) {
                v[first + i] = switch (d.dtype()) {
                    case FLOAT64 -> b.getDouble(i * 8);
                    case FLOAT32 -> b.getFloat(i * 4);
                    case INT32 -> b.getInt(i * 4);
                    default -> {
                        long x = b.getLong(i * 8);
                        if (x > MAX_EXACT || x < -MAX_EXACT) {
                            throw new ModelFileException(
                                    d.name() + "[" + (first + i) + "]", x + " (expected: an integer within +-2^53)");
                        }
                        yield x;
                    }
                };
            }
        }
        return v;
    }

    private static ByteBuffer readAt(FileChannel ch, long at, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining()) {
            if (ch.read(b, at + b.position()) < 0) {
                throw new ModelFileException(
                        "file", "ends at " + (at + b.position()) + " (expected: " + (at + n) + " bytes or more)");
            }
        }
        return b.flip();
    }

    private static String string(Map<String, Object> h, String key) {
        if (!(h.get(key) instanceof String s)) {
            throw new ModelFileException(key, h.get(key) + " (expected: a string)");
        }
        return s;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Map<String, Object> h, String key) {
        Object v = h.get(key);
        if (v == null && !key.equals("arrays")) {
            return Map.of();
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new ModelFileException(key, "a JSON " + kind(v) + " (expected: an object)");
        }
        return (Map<String, Object>) m;
    }

    private static String kind(Object v) {
        return switch (v) {
            case null -> "null";
            case Map<?, ?> m -> "object";
            case List<?> l -> "list";
            case String s -> "string";
            case Boolean b -> "boolean";
            default -> "number";
        };
    }

    private static List<String> sorted(Set<String> keys) {
        return keys.stream().sorted().toList();
    }

    private static long align(long n) {
        return (n + 7) & -8L;
    }

    static String shapeText(long[] shape) {
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < shape.length; i++) {
            sb.append(i > 0 ? ", " : "").append(shape[i]);
        }
        return sb.append(shape.length == 1 ? ",)" : ")").toString();
    }

    // ---------------------------------------------------------------- writing

    /** Writes this file to {@code path}, replacing what is there. */
    public void write(Path path) throws IOException {
        Map<String, Object> entries = new LinkedHashMap<>();
        long offset = 0;
        for (Array a : arrays.values()) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("dtype", a.dtype().wireName());
            e.put("shape", Arrays.stream(a.shape()).boxed().toList());
            e.put("offset", offset);
            entries.put(a.name(), e);
            offset += align((long) a.values().length * a.dtype().byteSize());
        }
        Map<String, Object> header = new LinkedHashMap<>();
        header.put("format_version", (long) FORMAT_VERSION);
        header.put("estimator", estimator);
        header.put("producer", producer);
        header.put("params", params);
        header.put("attributes", attributes);
        header.put("arrays", entries);
        byte[] text = ModelJson.write(header).getBytes(StandardCharsets.UTF_8);
        try (OutputStream out = Files.newOutputStream(path)) {
            ByteBuffer prefix = ByteBuffer.allocate(PREFIX).order(ByteOrder.LITTLE_ENDIAN);
            prefix.put(MAGIC).putLong(text.length);
            out.write(prefix.array());
            out.write(text);
            out.write(new byte[(int) (align(text.length) - text.length)]);
            for (Array a : arrays.values()) {
                int es = a.dtype().byteSize();
                ByteBuffer b = ByteBuffer.allocate((int) align((long) a.values().length * es))
                        .order(ByteOrder.LITTLE_ENDIAN);
                for (double x : a.values()) {
                    switch (a.dtype()) {
                        case FLOAT64 -> b.putDouble(x);
                        case FLOAT32 -> b.putFloat((float) x);
                        case INT32 -> b.putInt((int) x);
                        default -> b.putLong((long) x);
                    }
                }
                out.write(b.array());
            }
        }
    }

    /**
     * What {@code cuwire model inspect} prints: the estimator, its producer, parameters and attributes, then one line
     * per array with its dtype, shape and range.
     */
    public String describe() {
        StringBuilder sb = new StringBuilder();
        sb.append("estimator  ").append(estimator).append('\n');
        sb.append("producer   ").append(producer).append('\n');
        sb.append("format     ").append(FORMAT_VERSION).append('\n');
        sb.append("params     ").append(ModelJson.write(params)).append('\n');
        sb.append("attributes ").append(ModelJson.write(attributes)).append('\n');
        sb.append("arrays\n");
        for (Array a : arrays.values()) {
            double min = Double.POSITIVE_INFINITY;
            double max = Double.NEGATIVE_INFINITY;
            for (double x : a.values()) {
                min = Math.min(min, x);
                max = Math.max(max, x);
            }
            sb.append(String.format(
                    "  %-26s %-8s %-14s %s%n",
                    a.name(),
                    a.dtype().wireName(),
                    a.shapeText(),
                    a.values().length == 0 ? "empty" : "min " + min + "  max " + max));
        }
        return sb.toString();
    }
}
