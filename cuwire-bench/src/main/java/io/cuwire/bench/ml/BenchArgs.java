package io.cuwire.bench.ml;

import io.cuwire.memory.NdArray;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the ML benchmarks' command lines share: {@code --name value} options; and how they read an array back.
 */
final class BenchArgs {
    private BenchArgs() {
    }

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
            default -> throw new IllegalArgumentException(a + ": dtype " + a.dtype().wireName()
                    + " (expected: float32, float64, int32 or int64)");
        }
        return out;
    }

    /**
     * The options of {@code args} ({@code --name value} pairs) by name, the last of a repeated one winning.
     *
     * @param expected what the message of a refusal names as expected, e.g. {@code "--rows N, --cols D"}
     * @throws IllegalArgumentException for a name not among {@code known} or without a value
     */
    static Map<String, String> options(String[] args, String expected, String... known) {
        List<String> names = Arrays.asList(known);
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            String a = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("unknown or incomplete option '" + a + "' (expected: " + expected
                        + ")");
            }
            if (!names.contains(a)) {
                throw new IllegalArgumentException("unknown option '" + a + "' (expected: " + expected + ")");
            }
            out.put(a, args[i + 1]);
        }
        return out;
    }

    /** Option {@code name} as a long, or {@code otherwise} when absent. */
    static long longOption(Map<String, String> options, String name, long otherwise) {
        String v = options.get(name);
        try {
            return v == null ? otherwise : Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " " + v + " is not a number", e);
        }
    }

    /** Option {@code name} as an int, or {@code otherwise} when absent. */
    static int intOption(Map<String, String> options, String name, int otherwise) {
        long v = longOption(options, name, otherwise);
        if (v != (int) v) {
            throw new IllegalArgumentException(name + " " + v + " is out of range");
        }
        return (int) v;
    }
}
