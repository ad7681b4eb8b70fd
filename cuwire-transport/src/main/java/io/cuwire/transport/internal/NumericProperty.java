package io.cuwire.transport.internal;

/**
 * The transport's numeric system properties read one way: blank or unset means the default; otherwise a whole number
 * within bounds, or an {@link IllegalArgumentException} that names the property, its value and what it expects.
 */
public final class NumericProperty {
    private NumericProperty() {}

    /**
     * The value of property {@code name} given as {@code value} ({@code null} when unset).
     *
     * @param unit what the number counts, for the message ({@code bytes}, {@code microseconds})
     * @param max the largest value, {@link Long#MAX_VALUE} for none
     * @throws IllegalArgumentException naming the property when the value is not a whole number in {@code min..max}
     */
    public static long parse(String name, String value, long defaultValue, long min, long max, String unit) {
        if (value == null || value.isBlank()) {
            return defaultValue;
        }
        try {
            long n = Long.parseLong(value.strip());
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new IllegalArgumentException(name + "=" + value + " (expected: " + unit + ", "
                + (max == Long.MAX_VALUE ? ">= " + min : min + ".." + max) + ")");
    }
}
