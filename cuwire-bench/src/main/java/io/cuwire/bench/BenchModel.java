package io.cuwire.bench;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.io.Serial;
import java.io.Serializable;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The estimator every benchmark moves: ten fields — hyper-parameters (scalars, a string, an enum, a flag), a small
 * list of feature names, and two fitted {@link DType#FLOAT32} arrays of the same byte size, {@code coef} and
 * {@code centers}, in device memory. Serializable for the JDK baseline; the arrays use {@link NdArray}'s serial form.
 */
public final class BenchModel implements Serializable, AutoCloseable {
    @Serial
    private static final long serialVersionUID = 1L;

    /** How the centers were initialised. */
    public enum Init {
        K_MEANS_PLUS_PLUS,
        RANDOM
    }

    int nClusters;
    int maxIter;
    double tol;
    long randomState;
    String algorithm;
    Init init;
    boolean fitted;
    ArrayList<String> featureNames;
    NdArray coef;
    NdArray centers;

    /** For the deserializers. */
    public BenchModel() {}

    /** A fitted model whose two arrays hold {@code arrayBytes} bytes each (a multiple of 4) in {@code memory}. */
    public static BenchModel fitted(BufferAllocator<?> memory, long arrayBytes) {
        if (arrayBytes % Float.BYTES != 0 || arrayBytes < 8 * Float.BYTES) {
            throw new IllegalArgumentException("arrayBytes: " + arrayBytes + " (expected: a multiple of 4, >= 32)");
        }
        BenchModel m = new BenchModel();
        m.nClusters = 8;
        m.maxIter = 300;
        m.tol = 1e-4;
        m.randomState = 42;
        m.algorithm = "lloyd";
        m.init = Init.K_MEANS_PLUS_PLUS;
        m.fitted = true;
        m.featureNames = new ArrayList<>(List.of("sepal_length", "sepal_width", "petal_length", "petal_width"));
        long elements = arrayBytes / Float.BYTES;
        m.coef = filled(memory, elements / 8, 8, 0.25f);
        try {
            m.centers = filled(memory, 8, elements / 8, -1.5f);
        } catch (RuntimeException | Error e) {
            m.coef.close();
            throw e;
        }
        return m;
    }

    /** A C-order float32 matrix of {@code rows × cols}, filled with a pattern through the copy engine by 1 MiB. */
    private static NdArray filled(BufferAllocator<?> memory, long rows, long cols, float base) {
        NdArray a = NdArray.empty(memory, DType.FLOAT32, Order.C, rows, cols);
        try {
            float[] chunk = new float[(int) Math.min(a.size(), 1 << 18)];
            for (int i = 0; i < chunk.length; i++) {
                chunk[i] = base + i * 1e-3f;
            }
            MemorySegment src = MemorySegment.ofArray(chunk);
            for (long off = 0; off < a.byteSize(); off += src.byteSize()) {
                CopyEngine.copyFromSegment(
                        src.asSlice(0, Math.min(src.byteSize(), a.byteSize() - off)), a.buffer(), off);
            }
            return a;
        } catch (RuntimeException | Error e) {
            a.close();
            throw e;
        }
    }

    /** Bytes in the two arrays. */
    public long arrayBytes() {
        return coef.byteSize() + centers.byteSize();
    }

    /** Whether {@code other} holds the same hyper-parameters and arrays of the same dtype and shape. */
    public boolean sameShapeAs(BenchModel other) {
        return nClusters == other.nClusters
                && maxIter == other.maxIter
                && tol == other.tol
                && randomState == other.randomState
                && algorithm.equals(other.algorithm)
                && init == other.init
                && fitted == other.fitted
                && featureNames.equals(other.featureNames)
                && coef.dtype() == other.coef.dtype()
                && java.util.Arrays.equals(coef.shape(), other.coef.shape())
                && centers.dtype() == other.centers.dtype()
                && java.util.Arrays.equals(centers.shape(), other.centers.shape());
    }

    /** Whether the arrays' elements are equal too (copies them to the host). */
    public boolean sameContentAs(BenchModel other) {
        return sameShapeAs(other) && coef.contentEquals(other.coef) && centers.contentEquals(other.centers);
    }

    /** Closes both arrays (owned arrays free their memory; views only end their use). */
    @Override
    public void close() {
        try {
            coef.close();
        } finally {
            centers.close();
        }
    }
}
