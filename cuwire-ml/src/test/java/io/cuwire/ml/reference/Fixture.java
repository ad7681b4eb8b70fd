package io.cuwire.ml.reference;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One scikit-learn reference fixture written by {@code src/test/fixtures/make_fixtures.py}: named float64 arrays
 * ({@code = name dims...} then one line of C-order values).
 */
final class Fixture {
    /** An array of the fixture: its shape and C-order values. */
    record Array(long[] shape, double[] values) {
        int rows() {
            return (int) shape[0];
        }

        int cols() {
            return shape.length > 1 ? (int) shape[1] : 1;
        }

        int[] ints() {
            int[] out = new int[values.length];
            for (int i = 0; i < out.length; i++) {
                out[i] = (int) values[i];
            }
            return out;
        }

        long[] longs() {
            long[] out = new long[values.length];
            for (int i = 0; i < out.length; i++) {
                out[i] = (long) values[i];
            }
            return out;
        }

        /** Rows {@code from .. to-1} of a matrix. */
        Array rows(int from, int to) {
            int c = cols();
            return new Array(new long[] {to - from, c}, Arrays.copyOfRange(values, from * c, to * c));
        }

        /** Elements {@code from .. to-1} of a vector. */
        Array slice(int from, int to) {
            return new Array(new long[] {to - from}, Arrays.copyOfRange(values, from, to));
        }
    }

    private final String name;
    private final Map<String, Array> arrays;

    private Fixture(String name, Map<String, Array> arrays) {
        this.name = name;
        this.arrays = arrays;
    }

    /** Loads {@code /fixtures/<name>.txt} from the test class path. */
    static Fixture load(String name) {
        String resource = "/fixtures/" + name + ".txt";
        Map<String, Array> arrays = new LinkedHashMap<>();
        try (InputStream in = Fixture.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("no fixture " + resource + " on the class path");
            }
            BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            while ((line = r.readLine()) != null) {
                if (line.startsWith("#") || line.isBlank()) {
                    continue;
                }
                if (!line.startsWith("= ")) {
                    throw new IllegalStateException(resource + ": expected '= name dims...', got " + line);
                }
                String[] head = line.substring(2).trim().split(" ");
                long[] shape = new long[head.length - 1];
                for (int i = 1; i < head.length; i++) {
                    shape[i - 1] = Long.parseLong(head[i]);
                }
                String[] tokens = r.readLine().trim().split(" ");
                double[] values = new double[tokens.length];
                for (int i = 0; i < tokens.length; i++) {
                    values[i] = Double.parseDouble(tokens[i]);
                }
                arrays.put(head[0], new Array(shape, values));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new Fixture(name, arrays);
    }

    /** The array called {@code key}. */
    Array get(String key) {
        Array a = arrays.get(key);
        if (a == null) {
            throw new IllegalArgumentException(
                    "fixture " + name + " has no array '" + key + "' (has: " + arrays.keySet() + ")");
        }
        return a;
    }

    /** A scalar of the fixture. */
    double scalar(String key) {
        return get(key).values()[0];
    }
}
