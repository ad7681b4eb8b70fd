package io.cuwire.bench.ml;

import io.cuwire.memory.NdArray;
import java.util.Arrays;

/**
 * How the ML benchmarks read an array back to compare it.
 */
final class BenchArgs {
    private BenchArgs() {}

    /**
     * The elements of a float32, float64, int32 or int64 array as doubles, in C order (an int64 beyond 2^53 rounds).
     *
     * @throws IllegalArgumentException for another dtype
     */
    static double[] numbers(NdArray a) {
        double[] out;
        switch (a.dtype()) {
            case FLOAT64 -> out = a.toDoubleArray();
            case FLOAT32 -> {
                float[] v = a.toFloatArray();
                out = new double[v.length];
                for (int i = 0; i < v.length; i++) {
                    out[i] = v[i];
                }
            }
            case INT32 -> out = Arrays.stream(a.toIntArray()).asDoubleStream().toArray();
            case INT64 -> out = Arrays.stream(a.toLongArray()).asDoubleStream().toArray();
            default ->
                throw new IllegalArgumentException(
                        a + ": dtype " + a.dtype().wireName() + " (expected: float32, float64, int32 or int64)");
        }
        return out;
    }
}
