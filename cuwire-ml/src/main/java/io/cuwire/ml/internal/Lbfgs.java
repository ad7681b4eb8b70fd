package io.cuwire.ml.internal;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Limited-memory BFGS with a backtracking (Armijo) line search, driven from outside ("reverse communication"): the
 * caller evaluates the objective and its gradient at {@link #point()} — on one device, or summed over the partials
 * of many workers — and hands them to {@link #accept}, until {@link #done()}. The parameter vector is model-sized
 * and lives on the host.
 */
public final class Lbfgs {
    private static final int MEMORY = 10;
    private static final double ARMIJO = 1e-4;
    private static final int MAX_BACKTRACKS = 40;
    private static final double FTOL = 1e-13;

    private final int size;
    private final int maxIter;
    private final double gtol;
    private final Deque<double[][]> pairs = new ArrayDeque<>();
    private double[] x;
    private double f = Double.NaN;
    private double[] g;
    private double[] direction;
    private double step;
    private double slope;
    private double[] trial;
    private int iterations;
    private int backtracks;
    private boolean done;
    private String reason = "running";

    /**
     * A solver starting at {@code x0}.
     *
     * @param maxIter the most iterations (accepted steps)
     * @param gtol stop when the largest absolute gradient component is at most this
     */
    public Lbfgs(double[] x0, int maxIter, double gtol) {
        this.size = x0.length;
        this.x = x0.clone();
        this.trial = x0.clone();
        this.maxIter = maxIter;
        this.gtol = gtol;
    }

    /** Where to evaluate next. */
    public double[] point() {
        return trial.clone();
    }

    /** Whether the solver has stopped; {@link #solution()} is then the answer. */
    public boolean done() {
        return done;
    }

    /** Why the solver stopped, or {@code running}. */
    public String reason() {
        return reason;
    }

    /** Accepted steps so far. */
    public int iterations() {
        return iterations;
    }

    /** The best point so far. */
    public double[] solution() {
        return x.clone();
    }

    /** The objective at {@link #solution()}. */
    public double value() {
        return f;
    }

    /** Takes the objective {@code value} and {@code gradient} at {@link #point()} and moves to the next point. */
    public void accept(double value, double[] gradient) {
        if (done) {
            throw new IllegalStateException("the solver has stopped: " + reason);
        }
        if (gradient.length != size) {
            throw new IllegalArgumentException("gradient of " + gradient.length + " (expected: " + size + ")");
        }
        if (g == null) {
            f = value;
            g = gradient.clone();
            if (converged()) {
                return;
            }
            newDirection(1 / Math.max(norm(g), 1e-300));
            return;
        }
        if (Double.isFinite(value) && value <= f + ARMIJO * step * slope) {
            double[] s = new double[size];
            double[] y = new double[size];
            for (int i = 0; i < size; i++) {
                s[i] = trial[i] - x[i];
                y[i] = gradient[i] - g[i];
            }
            if (dot(s, y) > 1e-10 * dot(y, y)) {
                pairs.addLast(new double[][] {s, y});
                if (pairs.size() > MEMORY) {
                    pairs.removeFirst();
                }
            }
            double previous = f;
            x = trial.clone();
            f = value;
            g = gradient.clone();
            iterations++;
            backtracks = 0;
            if (converged()) {
                return;
            }
            if ((previous - f) <= FTOL * Math.max(Math.max(Math.abs(previous), Math.abs(f)), 1)) {
                stop("objective change below " + FTOL);
                return;
            }
            if (iterations >= maxIter) {
                stop("maxIter " + maxIter + " reached");
                return;
            }
            newDirection(1);
        } else {
            if (++backtracks > MAX_BACKTRACKS) {
                stop("line search failed");
                return;
            }
            step *= 0.5;
            for (int i = 0; i < size; i++) {
                trial[i] = x[i] + step * direction[i];
            }
        }
    }

    private boolean converged() {
        double max = 0;
        for (double v : g) {
            max = Math.max(max, Math.abs(v));
        }
        if (max <= gtol) {
            stop("gradient below tol");
            return true;
        }
        return false;
    }

    private void stop(String why) {
        done = true;
        reason = why;
        trial = x.clone();
    }

    private void newDirection(double firstStep) {
        double[] q = g.clone();
        double[][][] list = pairs.toArray(new double[0][][]);
        double[] alpha = new double[list.length];
        for (int k = list.length - 1; k >= 0; k--) {
            double rho = 1 / dot(list[k][1], list[k][0]);
            alpha[k] = rho * dot(list[k][0], q);
            axpy(-alpha[k], list[k][1], q);
        }
        if (list.length > 0) {
            double[][] last = list[list.length - 1];
            double gamma = dot(last[0], last[1]) / dot(last[1], last[1]);
            for (int i = 0; i < size; i++) {
                q[i] *= gamma;
            }
        }
        for (int k = 0; k < list.length; k++) {
            double rho = 1 / dot(list[k][1], list[k][0]);
            double beta = rho * dot(list[k][1], q);
            axpy(alpha[k] - beta, list[k][0], q);
        }
        for (int i = 0; i < size; i++) {
            q[i] = -q[i];
        }
        slope = dot(g, q);
        if (!(slope < 0)) {
            pairs.clear();
            q = g.clone();
            for (int i = 0; i < size; i++) {
                q[i] = -q[i];
            }
            slope = dot(g, q);
            firstStep = 1 / Math.max(norm(g), 1e-300);
        }
        direction = q;
        step = list.length == 0 ? firstStep : 1;
        for (int i = 0; i < size; i++) {
            trial[i] = x[i] + step * direction[i];
        }
    }

    private static double dot(double[] a, double[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += a[i] * b[i];
        }
        return s;
    }

    private static double norm(double[] a) {
        return Math.sqrt(dot(a, a));
    }

    private static void axpy(double alpha, double[] x, double[] y) {
        for (int i = 0; i < y.length; i++) {
            y[i] += alpha * x[i];
        }
    }
}
