package io.cuwire.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * What one {@code cuwire demo} run measured: the table the printed output, the {@link Verdict}s and the
 * {@link Report} are all made from. Immutable.
 *
 * @param setting the cluster, in words (workers, platform, devices)
 * @param repeat the timed broadcasts per path that each row's times are the median of
 * @param fits the fits on the workers
 * @param rows one per model, transport and family, in the order measured
 * @param sweep broadcast times of the payload model at each size, per transport and family
 * @param skipped the transports not measured, and why
 */
record DemoResults(
        String setting, int repeat, List<Fit> fits, List<Row> rows, List<SweepPoint> sweep, List<Skipped> skipped) {
    DemoResults {
        fits = List.copyOf(fits);
        rows = List.copyOf(rows);
        sweep = List.copyOf(sweep);
        skipped = List.copyOf(skipped);
    }

    /**
     * One measured path: a model broadcast with one family over one transport, then used to predict.
     *
     * @param model the model's class name
     * @param transport the cluster's transport
     * @param family the broadcast's serializer family
     * @param modelBytes the bytes of the model's arrays (what the frames carry)
     * @param broadcastMillis the median broadcast, from the call to the last worker's acknowledgement
     * @param broadcastMinMillis the fastest of the timed broadcasts
     * @param broadcastMaxMillis the slowest of the timed broadcasts
     * @param d2h bytes copied device to host during a broadcast, client and workers (the most of any run)
     * @param h2d bytes copied host to device during a broadcast, client and workers (the most of any run)
     * @param predictMillis the median of predicting every partition on its worker (results stay there)
     * @param match whether the predictions of every run agree with the reference
     * @param detail how they were compared
     */
    record Row(
            String model,
            String transport,
            String family,
            long modelBytes,
            double broadcastMillis,
            double broadcastMinMillis,
            double broadcastMaxMillis,
            long d2h,
            long h2d,
            double predictMillis,
            boolean match,
            String detail) {
        /** {@code transport / family}. */
        String path() {
            return transport + " / " + family;
        }

        /** Bytes the broadcast moved between device and host, both directions. */
        long hostBytes() {
            return d2h + h2d;
        }
    }

    /** A fit on the workers and how it compares with the single-process fit. */
    record Fit(String model, double millis, boolean match, String detail) {}

    /**
     * The median broadcast time of the payload model at one size.
     *
     * @param transport the cluster's transport
     * @param family the broadcast's serializer family
     * @param bytes the model's array bytes
     * @param broadcastMillis the median of the timed broadcasts
     */
    record SweepPoint(String transport, String family, long bytes, double broadcastMillis) {
        /** {@code transport / family}. */
        String path() {
            return transport + " / " + family;
        }
    }

    /** A transport not measured, and why. */
    record Skipped(String transport, String reason) {}

    /** The models in the order first measured. */
    List<String> modelNames() {
        List<String> names = new ArrayList<>();
        for (Row r : rows) {
            if (!names.contains(r.model())) {
                names.add(r.model());
            }
        }
        return names;
    }

    /** The rows of {@code model}, in the order measured. */
    List<Row> rowsOf(String model) {
        return rows.stream().filter(r -> r.model().equals(model)).toList();
    }

    /** Whether every fit and every path matched its reference (and something was measured). */
    boolean allMatch() {
        return !rows.isEmpty()
                && fits.stream().allMatch(Fit::match)
                && rows.stream().allMatch(Row::match);
    }
}
