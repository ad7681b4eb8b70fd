package io.cuwire.bench.harness;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The one size grammar of every benchmark option and of {@code cuwire demo --model-size}: a whole number of bytes
 * with an optional binary unit, case-insensitive, no space: {@code 4096}, {@code 4096b}, {@code 64k} = {@code 64KiB}
 * (65,536 bytes), {@code 1m} = {@code 1MiB}, {@code 1g} = {@code 1GiB}, {@code 1t} = {@code 1TiB}. Every unit is a
 * power of 1024 (what the benchmarks always meant by {@code 1g} and by {@code 1GiB}), so {@code 1g} and {@code 1GiB}
 * name the same size. {@code 1MB}, {@code 1GB} and the like are refused: they usually mean powers of 1000.
 */
public final class Sizes {
    /** What a message about a bad size says was expected. */
    public static final String EXPECTED = "bytes with an optional binary unit, e.g. 4096, 64KiB, 1m, 1GiB or 1g";

    private static final String[] UNITS = {"k", "m", "g", "t"};

    private Sizes() {}

    /**
     * The bytes {@code text} names.
     *
     * @throws IllegalArgumentException naming {@code text} when it is not a size or does not fit a {@code long}
     */
    public static long parse(String text) {
        String t = text.strip().toLowerCase(Locale.ROOT);
        int shift = 0;
        for (int i = 0; i < UNITS.length; i++) {
            String u = UNITS[i];
            for (String suffix : new String[] {u + "ib", u}) {
                if (t.endsWith(suffix) && t.length() > suffix.length()) {
                    shift = 10 * (i + 1);
                    t = t.substring(0, t.length() - suffix.length());
                    break;
                }
            }
            if (shift > 0) {
                break;
            }
        }
        if (shift == 0 && t.endsWith("b")) {
            t = t.substring(0, t.length() - 1);
        }
        if (t.isEmpty() || !t.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("size '" + text + "' (expected: " + EXPECTED + ")");
        }
        try {
            return Math.multiplyExact(Long.parseLong(t), 1L << shift);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(
                    "size '" + text + "' is too large (expected: at most " + Long.MAX_VALUE + " bytes)", e);
        }
    }

    /**
     * The sizes of a comma-separated list, e.g. {@code 1KiB,1MiB,64m}.
     *
     * @throws IllegalArgumentException naming the first entry that is not a size
     */
    public static List<Long> parseList(String text) {
        List<Long> out = new ArrayList<>();
        for (String s : text.split(",", -1)) {
            out.add(parse(s));
        }
        return List.copyOf(out);
    }

    /** {@code bytes} in the largest binary unit that divides it: {@code 1GiB}, {@code 64MiB}, {@code 1000}. */
    public static String format(long bytes) {
        String[] names = {"KiB", "MiB", "GiB", "TiB"};
        for (int i = names.length; i >= 1; i--) {
            long unit = 1L << (10 * i);
            if (bytes != 0 && bytes % unit == 0) {
                return bytes / unit + names[i - 1];
            }
        }
        return Long.toString(bytes);
    }
}
