package io.cuwire.ml.cluster;

import java.util.SplittableRandom;

/** K-means of a few weighted points on the host: the client's reduction of the partitions' candidate centers. */
final class WeightedKMeans {
    private static final int REFINE_STEPS = 30;

    private WeightedKMeans() {}

    /** {@code k} centers (row-major k x d) for {@code points} with {@code weights}. */
    static double[] fit(double[][] points, double[] weights, int k, SplittableRandom random) {
        int m = points.length;
        int d = points[0].length;
        int trials = 2 + (int) Math.log(k);
        double[] centers = new double[k * d];
        double[] closest = new double[m];
        double[] scaled = new double[m];
        int first = KMeans.sample(random, weights);
        System.arraycopy(points[first], 0, centers, 0, d);
        for (int i = 0; i < m; i++) {
            closest[i] = distance(points[i], centers, 0, d);
        }
        for (int c = 1; c < k; c++) {
            for (int i = 0; i < m; i++) {
                scaled[i] = weights[i] * closest[i];
            }
            int best = -1;
            double bestPotential = Double.POSITIVE_INFINITY;
            for (int t = 0; t < trials; t++) {
                int candidate = KMeans.sample(random, scaled);
                double potential = 0;
                for (int i = 0; i < m; i++) {
                    potential += weights[i] * Math.min(closest[i], distance(points[i], points[candidate], d));
                }
                if (potential < bestPotential) {
                    bestPotential = potential;
                    best = candidate;
                }
            }
            System.arraycopy(points[best], 0, centers, c * d, d);
            for (int i = 0; i < m; i++) {
                closest[i] = Math.min(closest[i], distance(points[i], points[best], d));
            }
        }
        for (int step = 0; step < REFINE_STEPS; step++) {
            double[] sums = new double[k * d];
            double[] counts = new double[k];
            for (int i = 0; i < m; i++) {
                int arg = 0;
                double bestD = Double.POSITIVE_INFINITY;
                for (int c = 0; c < k; c++) {
                    double dist = distance(points[i], centers, c * d, d);
                    if (dist < bestD) {
                        bestD = dist;
                        arg = c;
                    }
                }
                counts[arg] += weights[i];
                for (int j = 0; j < d; j++) {
                    sums[arg * d + j] += weights[i] * points[i][j];
                }
            }
            boolean moved = false;
            for (int c = 0; c < k; c++) {
                if (counts[c] > 0) {
                    for (int j = 0; j < d; j++) {
                        double v = sums[c * d + j] / counts[c];
                        moved |= v != centers[c * d + j];
                        centers[c * d + j] = v;
                    }
                }
            }
            if (!moved) {
                break;
            }
        }
        return centers;
    }

    private static double distance(double[] p, double[] centers, int offset, int d) {
        double s = 0;
        for (int j = 0; j < d; j++) {
            double diff = p[j] - centers[offset + j];
            s += diff * diff;
        }
        return s;
    }

    private static double distance(double[] p, double[] q, int d) {
        return distance(p, q, 0, d);
    }
}
