package io.cuwire.ml;

import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.OpaqueBlob;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The {@value #FORMAT} layout of a fitted forest: one flat run of little-endian bytes that a GPU kernel walks as it
 * is, the way cuML's forests travel as one treelite blob. All offsets are multiples of 8.
 *
 * <pre>
 * header, 48 bytes:  int32 magic "CWF1", int32 version 1, int32 trees, int32 features,
 *                    int32 classes (0 for a regressor), int32 outputs per leaf (classes, or 1),
 *                    int64 nodes, int64 leaves, int64 reserved (0)
 * tree table:        (trees + 1) x {int64 first node, int64 first leaf}; the last entry holds the totals
 * nodes:             nodes x 16 bytes {int32 feature, int32 child, float64 threshold}
 *                    a split has feature >= 0: x[feature] &lt;= threshold goes to node child, else child + 1
 *                    a leaf has feature -1 and child = its leaf number; node and leaf numbers count from the
 *                    tree's first node and first leaf, so trees concatenate without rewriting
 * leaf values:       leaves x outputs float64: class probabilities, or the regression value
 * </pre>
 *
 * The blob's metadata repeats the header's counts ({@code trees}, {@code features}, {@code classes}, {@code nodes},
 * {@code leaves}) so that a reader can check shapes without reading device memory.
 */
public final class ForestLayout {
    /** The {@link OpaqueBlob#format()} of a forest. */
    public static final String FORMAT = "cuwire.forest/1";

    /** {@code "CWF1"} read as a little-endian int32. */
    public static final int MAGIC = 'C' | 'W' << 8 | 'F' << 16 | '1' << 24;

    static final int HEADER_BYTES = 48;
    static final int NODE_BYTES = 16;
    /** The longest Java array. */
    private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private ForestLayout() {}

    /** The counts of a forest. {@code classes} is 0 for a regressor. */
    public record Info(int trees, int features, int classes, long nodes, long leaves) {
        /** Values per leaf: the classes, or 1. */
        public int outputs() {
            return classes > 0 ? classes : 1;
        }

        /** The size of the layout in bytes. */
        public long byteSize() {
            return HEADER_BYTES + 16L * (trees + 1) + NODE_BYTES * nodes + 8L * outputs() * leaves;
        }
    }

    /**
     * One tree, numbered from its own root (node 0) and first leaf (leaf 0).
     *
     * @param feature per node: the split feature, or -1 for a leaf
     * @param child per node: the left child of a split (the right one is {@code child + 1}), or a leaf's number
     * @param threshold per node: the split threshold (0 for a leaf)
     * @param values per leaf, {@code outputs} values each, row after row
     */
    public record Tree(int[] feature, int[] child, double[] threshold, double[] values) {
        public Tree {
            Objects.requireNonNull(feature, "feature");
            if (child.length != feature.length || threshold.length != feature.length) {
                throw new IllegalArgumentException("tree arrays of different lengths: " + feature.length + ", "
                        + child.length + ", " + threshold.length);
            }
        }

        /** The number of leaves. */
        public int leaves() {
            int n = 0;
            for (int f : feature) {
                if (f < 0) {
                    n++;
                }
            }
            return n;
        }
    }

    /** The counts of {@code forest} from its metadata, after checking its format. */
    public static Info info(OpaqueBlob forest) {
        if (!FORMAT.equals(forest.format())) {
            throw new IllegalArgumentException("blob format '" + forest.format() + "' (expected: '" + FORMAT + "')");
        }
        Map<String, Object> m = forest.metadata();
        Info info = new Info(
                Math.toIntExact(count(m, "trees")),
                Math.toIntExact(count(m, "features")),
                Math.toIntExact(count(m, "classes")),
                count(m, "nodes"),
                count(m, "leaves"));
        if (info.byteSize() != forest.byteSize()) {
            throw new IllegalArgumentException("forest blob of " + forest.byteSize() + " bytes (expected: "
                    + info.byteSize() + " for " + info + ")");
        }
        return info;
    }

    private static long count(Map<String, Object> m, String key) {
        if (!(m.get(key) instanceof Long l) || l < 0) {
            throw new IllegalArgumentException(
                    "forest metadata '" + key + "' is " + m.get(key) + " (expected: a count >= 0)");
        }
        return l;
    }

    /** The blob metadata for {@code info}. */
    public static Map<String, Object> metadata(Info info) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("trees", (long) info.trees());
        m.put("features", (long) info.features());
        m.put("classes", (long) info.classes());
        m.put("nodes", info.nodes());
        m.put("leaves", info.leaves());
        return m;
    }

    /** The counts of {@code trees}. */
    public static Info infoOf(List<Tree> trees, int features, int classes) {
        long nodes = 0;
        long leaves = 0;
        for (Tree t : trees) {
            nodes += t.feature().length;
            leaves += t.leaves();
        }
        return new Info(trees.size(), features, classes, nodes, leaves);
    }

    /** Lays {@code trees} out in this format. */
    public static byte[] encode(List<Tree> trees, int features, int classes) {
        Info info = infoOf(trees, features, classes);
        if (info.byteSize() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(
                    "forest of " + info.byteSize() + " bytes is too large to build on the " + "Java heap");
        }
        int outputs = info.outputs();
        ByteBuffer b = ByteBuffer.allocate((int) info.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC)
                .putInt(1)
                .putInt(info.trees())
                .putInt(features)
                .putInt(classes)
                .putInt(outputs)
                .putLong(info.nodes())
                .putLong(info.leaves())
                .putLong(0);
        long node = 0;
        long leaf = 0;
        for (Tree t : trees) {
            b.putLong(node).putLong(leaf);
            node += t.feature().length;
            leaf += t.leaves();
        }
        b.putLong(node).putLong(leaf);
        for (Tree t : trees) {
            for (int i = 0; i < t.feature().length; i++) {
                b.putInt(t.feature()[i]).putInt(t.child()[i]).putDouble(t.threshold()[i]);
            }
        }
        for (Tree t : trees) {
            if (t.values().length != t.leaves() * outputs) {
                throw new IllegalArgumentException("tree with " + t.leaves() + " leaves has " + t.values().length
                        + " values (expected: " + t.leaves() * outputs + ")");
            }
            for (double v : t.values()) {
                b.putDouble(v);
            }
        }
        return b.array();
    }

    /** The trees of a forest laid out in {@code bytes}, checked against {@code info}. */
    public static List<Tree> decode(byte[] bytes, Info info) {
        MemorySegment s = MemorySegment.ofArray(bytes);
        checkHeader(s, info);
        int outputs = info.outputs();
        long tables = HEADER_BYTES;
        long nodes = tables + 16L * (info.trees() + 1);
        long values = nodes + NODE_BYTES * info.nodes();
        List<Tree> trees = new ArrayList<>();
        for (int t = 0; t < info.trees(); t++) {
            int n0 = (int) s.get(I64, tables + 16L * t);
            int l0 = (int) s.get(I64, tables + 16L * t + 8);
            int n1 = (int) s.get(I64, tables + 16L * (t + 1));
            int l1 = (int) s.get(I64, tables + 16L * (t + 1) + 8);
            int[] feature = new int[n1 - n0];
            int[] child = new int[n1 - n0];
            double[] threshold = new double[n1 - n0];
            for (int i = 0; i < feature.length; i++) {
                long at = nodes + (long) NODE_BYTES * (n0 + i);
                feature[i] = s.get(I32, at);
                child[i] = s.get(I32, at + 4);
                threshold[i] = s.get(F64, at + 8);
            }
            double[] v = new double[(l1 - l0) * outputs];
            MemorySegment.copy(s, F64, values + 8L * l0 * outputs, v, 0, v.length);
            trees.add(new Tree(feature, child, threshold, v));
        }
        return trees;
    }

    /**
     * The trees of {@code forest}, wherever it lives: its bytes are copied to the Java heap (through the copy engine
     * from device memory) and checked against its metadata.
     */
    public static List<Tree> decode(OpaqueBlob forest) {
        Info info = info(forest);
        if (forest.byteSize() > MAX_ARRAY) {
            throw new IllegalArgumentException(
                    "forest of " + forest.byteSize() + " bytes is too large to read " + "onto the Java heap");
        }
        byte[] bytes = new byte[(int) forest.byteSize()];
        if (forest.buffer() instanceof HostBuffer h) {
            MemorySegment.copy(h.segment(), 0, MemorySegment.ofArray(bytes), 0, bytes.length);
        } else {
            CopyEngine.copyToSegment(forest.buffer(), 0, MemorySegment.ofArray(bytes));
        }
        return decode(bytes, info);
    }

    private static void checkHeader(MemorySegment s, Info info) {
        if (s.byteSize() != info.byteSize()) {
            throw new IllegalArgumentException(
                    "forest of " + s.byteSize() + " bytes (expected: " + info.byteSize() + ")");
        }
        if (s.get(I32, 0) != MAGIC
                || s.get(I32, 4) != 1
                || s.get(I32, 8) != info.trees()
                || s.get(I32, 12) != info.features()
                || s.get(I32, 16) != info.classes()
                || s.get(I64, 24) != info.nodes()
                || s.get(I64, 32) != info.leaves()) {
            throw new IllegalArgumentException("forest header does not match its metadata " + info);
        }
    }

    /**
     * Walks the forest in {@code s} (host memory) for {@code rows} rows of {@code x} (row-major, {@code features}
     * columns), writing the mean over trees of the leaf values: {@code out[i * outputs + c]}. The reference the
     * GPU kernel is held to; {@link Walker} is the same walk for many calls.
     */
    public static void predict(MemorySegment s, Info info, double[] x, int rows, double[] out) {
        new Walker(s, info).predict(x, rows, out);
    }

    /**
     * A forest read for walking: its node table and leaf values copied onto the Java heap once, in bulk (a read
     * through a {@link MemorySegment} costs a hundred times more until the JIT has compiled the walk, which made a
     * JVM's first prediction with a forest ten times slower than its later ones). Immutable: one walker serves
     * several threads, each predicting its own rows.
     */
    public static final class Walker {
        private final int outputs;
        private final int features;
        private final int trees;
        private final int[] nodeStart;
        private final int[] leafStart;
        /** Per node two longs: feature | child << 32 (little-endian int32s), then the threshold's bits. */
        private final long[] node;

        private final double[] value;

        /**
         * Reads the forest in {@code s} (host memory), checked against {@code info}.
         *
         * @throws IllegalArgumentException if the header does not match {@code info} or the forest is too large for
         *     Java arrays
         */
        public Walker(MemorySegment s, Info info) {
            checkHeader(s, info);
            if (2 * info.nodes() > MAX_ARRAY || (long) info.outputs() * info.leaves() > MAX_ARRAY) {
                throw new IllegalArgumentException("forest " + info + " is too large to predict with on the host");
            }
            outputs = info.outputs();
            features = info.features();
            trees = info.trees();
            long tables = HEADER_BYTES;
            long nodes = tables + 16L * (trees + 1);
            long values = nodes + NODE_BYTES * info.nodes();
            nodeStart = new int[trees];
            leafStart = new int[trees];
            for (int t = 0; t < trees; t++) {
                nodeStart[t] = (int) s.get(I64, tables + 16L * t);
                leafStart[t] = (int) s.get(I64, tables + 16L * t + 8);
            }
            node = new long[(int) (2 * info.nodes())];
            MemorySegment.copy(s, I64, nodes, node, 0, node.length);
            value = new double[(int) (outputs * info.leaves())];
            MemorySegment.copy(s, F64, values, value, 0, value.length);
        }

        /**
         * Writes the forest's prediction for {@code rows} rows of {@code x} (row-major, {@code features} columns)
         * into {@code out[i * outputs + c]}: the mean over trees of the leaf values, each row's sum taken over the
         * trees in their order. The rows are walked a tree at a time (that tree's nodes stay in the cache while every
         * row passes through it), so a call should take a block of rows that fits the cache beside one tree.
         */
        public void predict(double[] x, int rows, double[] out) {
            Arrays.fill(out, 0, rows * outputs, 0.0);
            for (int t = 0; t < trees; t++) {
                int base = nodeStart[t];
                int leaves = leafStart[t];
                for (int i = 0; i < rows; i++) {
                    int row = i * features;
                    int at = base;
                    long n = node[2 * at];
                    int feature = (int) n;
                    while (feature >= 0) {
                        int child = (int) (n >>> 32);
                        double threshold = Double.longBitsToDouble(node[2 * at + 1]);
                        at = base + (x[row + feature] <= threshold ? child : child + 1);
                        n = node[2 * at];
                        feature = (int) n;
                    }
                    int v = (leaves + (int) (n >>> 32)) * outputs;
                    int o = i * outputs;
                    for (int c = 0; c < outputs; c++) {
                        out[o + c] += value[v + c];
                    }
                }
            }
            double inv = trees == 0 ? 0 : 1.0 / trees;
            for (int i = 0; i < rows * outputs; i++) {
                out[i] *= inv;
            }
        }
    }
}
