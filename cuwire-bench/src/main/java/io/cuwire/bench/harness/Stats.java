package io.cuwire.bench.harness;

import java.util.Arrays;

/**
 * The statistics every benchmark reports over its timed repetitions: one median (the mean of the middle two for an
 * even count), minimum and maximum.
 *
 * @param median the median
 * @param min the smallest value
 * @param max the largest value
 * @param count how many values
 */
public record Stats(double median, double min, double max, int count) {
    /**
     * The statistics of {@code values}.
     *
     * @throws IllegalArgumentException if {@code values} is empty
     */
    public static Stats of(double[] values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("no values (expected: at least one)");
        }
        double[] v = values.clone();
        Arrays.sort(v);
        return new Stats(sortedMedian(v), v[0], v[v.length - 1], v.length);
    }

    /**
     * The median of {@code values} (the mean of the middle two for an even count).
     *
     * @throws IllegalArgumentException if {@code values} is empty
     */
    public static double median(double[] values) {
        return of(values).median();
    }

    private static double sortedMedian(double[] v) {
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}
