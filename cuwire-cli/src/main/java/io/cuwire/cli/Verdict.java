package io.cuwire.cli;

import io.cuwire.cli.DemoResults.Row;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The demo's verdict on one model, computed from the run's own rows by {@link #of}, a pure function: the fastest
 * {@code cuda} path against the pickle baseline ({@code java} over {@code tcp}) and against the fastest path of
 * another family. When the {@code cuda} path is not ahead the verdict says so, and why, from the same numbers: the
 * model is too small for bytes to matter, no transport kept its device frames off the host, or the difference lies
 * within the run-to-run spread.
 *
 * @param model the model's class name
 * @param cudaAhead whether the fastest {@code cuda} path broadcast faster than every path of the other families
 * @param text the verdict, one sentence or a few
 */
record Verdict(String model, boolean cudaAhead, String text) {
    /** Models of at most this many array bytes are too small for bytes to decide a broadcast's time. */
    static final long SMALL_MODEL_BYTES = 1L << 20;
    /** A predict after the fastest {@code cuda} broadcast slower than this many times the fastest is called out. */
    static final double SLOW_PREDICT = 1.5;

    private static final String CUDA = "cuda";
    private static final Comparator<Row> BY_BROADCAST = Comparator.comparingDouble(Row::broadcastMillis);

    /** The verdict on every model of {@code rows}, in the order the models were first measured. */
    static List<Verdict> all(List<Row> rows) {
        List<String> models = new ArrayList<>();
        for (Row r : rows) {
            if (!models.contains(r.model())) {
                models.add(r.model());
            }
        }
        return models.stream()
                .map(m -> of(m, rows.stream().filter(r -> r.model().equals(m)).toList()))
                .toList();
    }

    /** The verdict on {@code model} from its rows (rows of other models are refused). */
    static Verdict of(String model, List<Row> rows) {
        for (Row r : rows) {
            if (!r.model().equals(model)) {
                throw new IllegalArgumentException("a row of " + r.model() + " in the verdict on " + model);
            }
        }
        if (rows.isEmpty()) {
            return new Verdict(model, false, model + ": nothing was measured.");
        }
        String name = model + " (" + Info.bytes(rows.getFirst().modelBytes()) + ")";
        List<Row> cuda = rows.stream().filter(r -> r.family().equals(CUDA)).toList();
        List<Row> others = rows.stream().filter(r -> !r.family().equals(CUDA)).toList();
        if (cuda.isEmpty()) {
            return new Verdict(model, false, name + ": no cuda path was measured, so there is nothing to compare.");
        }
        Row best = cuda.stream().min(BY_BROADCAST).orElseThrow();
        String head = phrase(best) + ": " + ms(best.broadcastMillis()) + " ms, " + Info.bytes(best.hostBytes())
                + " through host";
        if (others.isEmpty()) {
            return new Verdict(model, false, name + ": " + head + "; no other family was measured." + tail(best, rows));
        }
        Row fastest = others.stream().min(BY_BROADCAST).orElseThrow();
        Row baseline = others.stream()
                .filter(r -> r.transport().equals("tcp") && r.family().equals("java"))
                .findFirst()
                .orElseGet(() -> others.stream().max(BY_BROADCAST).orElseThrow());
        StringBuilder s = new StringBuilder(name).append(": ");
        boolean ahead = best.broadcastMillis() < fastest.broadcastMillis();
        if (ahead) {
            s.append(head)
                    .append("; ")
                    .append(phrase(baseline))
                    .append(": ")
                    .append(ms(baseline.broadcastMillis()))
                    .append(" ms (")
                    .append(ratio(baseline, best))
                    .append(" slower)");
            if (fastest != baseline) {
                s.append("; fastest other path, ")
                        .append(phrase(fastest))
                        .append(": ")
                        .append(ms(fastest.broadcastMillis()))
                        .append(" ms (")
                        .append(ratio(fastest, best))
                        .append(" slower)");
            }
            if (overlap(best, fastest)) {
                s.append(", but within the run-to-run spread of the two (")
                        .append(spread(best))
                        .append(" against ")
                        .append(spread(fastest))
                        .append(")");
            }
        } else {
            s.append("cuda is not ahead: ")
                    .append(phrase(fastest))
                    .append(" took ")
                    .append(ms(fastest.broadcastMillis()))
                    .append(" ms, the fastest cuda path (")
                    .append(head)
                    .append(") ")
                    .append(ratio(best, fastest))
                    .append(" that. Why: ")
                    .append(String.join("; ", reasons(best, fastest, rows)));
        }
        return new Verdict(model, ahead, s.append('.').append(tail(best, rows)).toString());
    }

    /** Why the fastest cuda path {@code best} is not ahead of {@code fastest}, from the numbers. */
    private static List<String> reasons(Row best, Row fastest, List<Row> rows) {
        List<String> why = new ArrayList<>();
        if (best.modelBytes() <= SMALL_MODEL_BYTES) {
            double lo = rows.stream().mapToDouble(Row::broadcastMillis).min().orElseThrow();
            double hi = rows.stream().mapToDouble(Row::broadcastMillis).max().orElseThrow();
            why.add("the model is " + Info.bytes(best.modelBytes()) + ", too small for its bytes to matter: every "
                    + "path took " + ms(lo) + " to " + ms(hi) + " ms, the cost of a broadcast's messages and "
                    + "decoding, not of copies");
        }
        if (best.hostBytes() > 0) {
            why.add("no transport measured here kept the device frames off the host: " + phrase(best) + " moved "
                    + Info.bytes(best.hostBytes()) + " through host, " + phrase(fastest) + " "
                    + Info.bytes(fastest.hostBytes()));
        }
        if (overlap(best, fastest)) {
            why.add("the two are within their run-to-run spread (" + spread(best) + " against " + spread(fastest)
                    + ")");
        }
        if (why.isEmpty()) {
            why.add(phrase(best) + " moved " + Info.bytes(best.hostBytes()) + " through host against "
                    + Info.bytes(fastest.hostBytes()) + " yet took longer, outside the run-to-run spread, so the "
                    + "cost is not a host copy: it is in a step this table does not break down (a JFR recording "
                    + "does: README, Running on a GPU host)");
        }
        return why;
    }

    /** What follows the comparison: a slow predict after the fastest cuda path, and any path that mismatched. */
    private static String tail(Row best, List<Row> rows) {
        StringBuilder s = new StringBuilder();
        Optional<Row> quickest =
                rows.stream().filter(r -> r.predictMillis() > 0).min(Comparator.comparingDouble(Row::predictMillis));
        if (quickest.isPresent()
                && best.predictMillis() > SLOW_PREDICT * quickest.get().predictMillis()) {
            Row q = quickest.get();
            s.append(" Its predict took ")
                    .append(ms(best.predictMillis()))
                    .append(" ms, ")
                    .append(String.format(Locale.ROOT, "%.1f", best.predictMillis() / q.predictMillis()))
                    .append(" × the fastest (")
                    .append(ms(q.predictMillis()))
                    .append(" ms after ")
                    .append(phrase(q))
                    .append(").");
        }
        List<String> bad =
                rows.stream().filter(r -> !r.match()).map(Verdict::phrase).toList();
        if (!bad.isEmpty()) {
            s.append(" MISMATCH after ").append(String.join(", ", bad)).append(".");
        }
        return s.toString();
    }

    /** {@code family over transport}. */
    static String phrase(Row r) {
        return r.family() + " over " + r.transport();
    }

    private static boolean overlap(Row a, Row b) {
        return a.broadcastMinMillis() <= b.broadcastMaxMillis() && b.broadcastMinMillis() <= a.broadcastMaxMillis();
    }

    private static String spread(Row r) {
        return phrase(r) + " " + ms(r.broadcastMinMillis()) + "–" + ms(r.broadcastMaxMillis()) + " ms";
    }

    /** {@code slow}'s broadcast over {@code fast}'s, as {@code "2.4 ×"}. */
    private static String ratio(Row slow, Row fast) {
        if (!(fast.broadcastMillis() > 0)) {
            return "an unmeasurable ×";
        }
        double r = slow.broadcastMillis() / fast.broadcastMillis();
        return String.format(Locale.ROOT, r < 100 ? "%.1f ×" : "%.0f ×", r);
    }

    /** Milliseconds with three significant digits or so: 0.42, 3.14, 27.2, 612. */
    static String ms(double v) {
        return String.format(Locale.ROOT, v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v);
    }
}
