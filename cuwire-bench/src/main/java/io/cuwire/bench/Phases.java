package io.cuwire.bench;

import io.cuwire.bench.harness.Stats;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * How long named phases of each transfer took on one side (cuwire's paths: serializing, sending, receiving,
 * decoding): their medians over every transfer of a connection and their times in its first (cold) transfer, as
 * {@code name=ns} tokens. Not thread-safe.
 */
final class Phases {
    private final Map<String, List<Long>> nanos = new LinkedHashMap<>();

    void add(String phase, long ns) {
        nanos.computeIfAbsent(phase, k -> new ArrayList<>()).add(ns);
    }

    /**
     * {@code name=<median ns>} per phase, then {@code name@cold=<ns of the first transfer>}, space-separated, in
     * the order the phases were first added.
     */
    String medians() {
        List<String> tokens = new ArrayList<>();
        nanos.forEach((phase, list) -> tokens.add(String.format(
                Locale.ROOT,
                "%s=%.0f",
                phase,
                Stats.median(list.stream().mapToDouble(Long::doubleValue).toArray()))));
        nanos.forEach((phase, list) -> tokens.add(phase + COLD + "=" + list.getFirst()));
        return String.join(" ", tokens);
    }

    /** The suffix of a phase's token that holds the first transfer's time. */
    static final String COLD = "@cold";

    /** The {@code name=ns} tokens of {@code parts} (others skipped), as ms. */
    static Map<String, Double> parseMillis(String[] parts) {
        Map<String, Double> ms = new LinkedHashMap<>();
        for (String p : parts) {
            int eq = p.indexOf('=');
            if (eq > 0) {
                ms.put(p.substring(0, eq), Double.parseDouble(p.substring(eq + 1)) / 1e6);
            }
        }
        return ms;
    }
}
