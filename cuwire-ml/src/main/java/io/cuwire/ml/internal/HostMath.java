package io.cuwire.ml.internal;

import java.util.Arrays;

/**
 * Small dense linear algebra on the host, in doubles, for the model-sized steps of a merge: solving a d x d system,
 * the eigen-decomposition of a d x d covariance. Matrices are row-major {@code double[]}.
 */
public final class HostMath {
    private HostMath() {}

    /** The lower Cholesky factor of symmetric {@code a} (n x n), or {@code null} if it is not positive definite. */
    public static double[] cholesky(double[] a, int n) {
        double[] l = new double[n * n];
        for (int j = 0; j < n; j++) {
            double d = a[j * n + j];
            for (int k = 0; k < j; k++) {
                d -= l[j * n + k] * l[j * n + k];
            }
            if (!(d > 0)) {
                return null;
            }
            double ljj = Math.sqrt(d);
            l[j * n + j] = ljj;
            for (int i = j + 1; i < n; i++) {
                double s = a[i * n + j];
                for (int k = 0; k < j; k++) {
                    s -= l[i * n + k] * l[j * n + k];
                }
                l[i * n + j] = s / ljj;
            }
        }
        return l;
    }

    /** Solves {@code L L^T x = b}. */
    public static double[] choleskySolve(double[] l, int n, double[] b) {
        double[] y = new double[n];
        for (int i = 0; i < n; i++) {
            double s = b[i];
            for (int k = 0; k < i; k++) {
                s -= l[i * n + k] * y[k];
            }
            y[i] = s / l[i * n + i];
        }
        double[] x = new double[n];
        for (int i = n - 1; i >= 0; i--) {
            double s = y[i];
            for (int k = i + 1; k < n; k++) {
                s -= l[k * n + i] * x[k];
            }
            x[i] = s / l[i * n + i];
        }
        return x;
    }

    /**
     * The solution of symmetric positive semi-definite {@code a x = b}: by Cholesky when {@code a} is positive
     * definite, else the minimum-norm least-squares solution through the eigen-decomposition, eigenvalues below
     * {@code n * 1e-12} times the largest counted as zero (as {@code lstsq} does).
     */
    public static double[] solveSymmetric(double[] a, int n, double[] b) {
        double[] l = cholesky(a, n);
        if (l != null) {
            return choleskySolve(l, n, b);
        }
        Eigen e = symmetricEigen(a, n);
        double cutoff = Math.max(e.values()[0], 0) * n * 1e-12;
        double[] x = new double[n];
        for (int k = 0; k < n; k++) {
            double lambda = e.values()[k];
            if (lambda <= cutoff) {
                continue;
            }
            double proj = 0;
            for (int i = 0; i < n; i++) {
                proj += e.vectors()[k * n + i] * b[i];
            }
            proj /= lambda;
            for (int i = 0; i < n; i++) {
                x[i] += proj * e.vectors()[k * n + i];
            }
        }
        return x;
    }

    /**
     * Eigenvalues in descending order and their unit eigenvectors, one per row of {@code vectors}.
     *
     * @param values n eigenvalues, largest first
     * @param vectors n x n, row k the eigenvector of {@code values[k]}
     */
    public record Eigen(double[] values, double[] vectors) {}

    /** The eigen-decomposition of symmetric {@code a} (n x n) by cyclic Jacobi rotations. */
    public static Eigen symmetricEigen(double[] a, int n) {
        double[] m = a.clone();
        double[] v = new double[n * n];
        for (int i = 0; i < n; i++) {
            v[i * n + i] = 1;
        }
        for (int sweep = 0; sweep < 100; sweep++) {
            double off = 0;
            double diag = 0;
            for (int i = 0; i < n; i++) {
                diag += m[i * n + i] * m[i * n + i];
                for (int j = i + 1; j < n; j++) {
                    off += m[i * n + j] * m[i * n + j];
                }
            }
            if (off <= 1e-30 * Math.max(diag, Double.MIN_NORMAL)) {
                break;
            }
            for (int p = 0; p < n; p++) {
                for (int q = p + 1; q < n; q++) {
                    double apq = m[p * n + q];
                    if (apq == 0) {
                        continue;
                    }
                    double theta = (m[q * n + q] - m[p * n + p]) / (2 * apq);
                    double t = Math.signum(theta) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
                    if (theta == 0) {
                        t = 1;
                    }
                    double c = 1 / Math.sqrt(t * t + 1);
                    double s = t * c;
                    for (int k = 0; k < n; k++) {
                        double mkp = m[k * n + p];
                        double mkq = m[k * n + q];
                        m[k * n + p] = c * mkp - s * mkq;
                        m[k * n + q] = s * mkp + c * mkq;
                    }
                    for (int k = 0; k < n; k++) {
                        double mpk = m[p * n + k];
                        double mqk = m[q * n + k];
                        m[p * n + k] = c * mpk - s * mqk;
                        m[q * n + k] = s * mpk + c * mqk;
                    }
                    for (int k = 0; k < n; k++) {
                        double vkp = v[k * n + p];
                        double vkq = v[k * n + q];
                        v[k * n + p] = c * vkp - s * vkq;
                        v[k * n + q] = s * vkp + c * vkq;
                    }
                }
            }
        }
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (x, y) -> Double.compare(m[y * n + y], m[x * n + x]));
        double[] values = new double[n];
        double[] vectors = new double[n * n];
        for (int k = 0; k < n; k++) {
            int col = order[k];
            values[k] = m[col * n + col];
            for (int i = 0; i < n; i++) {
                vectors[k * n + i] = v[i * n + col];
            }
        }
        return new Eigen(values, vectors);
    }
}
