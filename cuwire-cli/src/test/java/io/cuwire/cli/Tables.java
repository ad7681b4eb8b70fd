package io.cuwire.cli;

import io.cuwire.cli.DemoResults.Fit;
import io.cuwire.cli.DemoResults.Row;
import io.cuwire.cli.DemoResults.Skipped;
import io.cuwire.cli.DemoResults.SweepPoint;
import java.util.ArrayList;
import java.util.List;

/** Synthetic demo tables for the verdict and report tests. */
final class Tables {
    static final List<String> TRANSPORTS = List.of("tcp", "ipc", "ucx");
    static final List<String> FAMILIES = List.of("cuda", "host", "java");

    private Tables() {}

    /** A row whose runs all took {@code ms} (min = max = median). */
    static Row row(
            String model, String transport, String family, long bytes, double ms, long hostBytes, double predictMs) {
        return spread(model, transport, family, bytes, ms, ms, ms, hostBytes, predictMs);
    }

    /** A row with its run-to-run spread. */
    static Row spread(
            String model,
            String transport,
            String family,
            long bytes,
            double ms,
            double min,
            double max,
            long hostBytes,
            double predictMs) {
        return new Row(
                model,
                transport,
                family,
                bytes,
                ms,
                min,
                max,
                hostBytes / 2,
                hostBytes - hostBytes / 2,
                predictMs,
                true,
                "synthetic");
    }

    /**
     * A whole run's results: three small models and a payload of {@code payloadBytes} over tcp, ipc and ucx, where
     * cuda over ipc moves nothing through host, and a sweep of {@code sizes} below it; times grow with the bytes.
     */
    static DemoResults run(long payloadBytes, List<Long> sizes) {
        List<Row> rows = new ArrayList<>();
        List<SweepPoint> sweep = new ArrayList<>();
        String[] models = {"LinearRegression", "KMeans", "RandomForestClassifier", "NearestNeighbors"};
        long[] bytes = {64, 256, 8768, payloadBytes};
        for (int t = 0; t < TRANSPORTS.size(); t++) {
            for (int m = 0; m < models.length; m++) {
                for (int f = 0; f < FAMILIES.size(); f++) {
                    double ms = time(bytes[m], t, f);
                    rows.add(spread(
                            models[m],
                            TRANSPORTS.get(t),
                            FAMILIES.get(f),
                            bytes[m],
                            ms,
                            ms * 0.9,
                            ms * 1.2,
                            hostBytes(bytes[m], t, f),
                            10 + m + f));
                }
            }
            for (long s : sizes) {
                for (int f = 0; f < FAMILIES.size(); f++) {
                    sweep.add(new SweepPoint(TRANSPORTS.get(t), FAMILIES.get(f), s, time(s, t, f)));
                }
            }
            for (int f = 0; f < FAMILIES.size(); f++) {
                sweep.add(new SweepPoint(TRANSPORTS.get(t), FAMILIES.get(f), payloadBytes, time(payloadBytes, t, f)));
            }
        }
        List<Fit> fits = List.of(
                new Fit("LinearRegression", 250, true, "synthetic"),
                new Fit("KMeans", 180, true, "synthetic"),
                new Fit("RandomForestClassifier", 370, true, "synthetic"));
        return new DemoResults(
                "2 workers on platform synthetic (devices 0 1)",
                3,
                fits,
                rows,
                sweep,
                List.of(new Skipped("nvlink", "synthetic: not a transport")));
    }

    /** 2 ms a message plus bytes at 1, 0.5 or 0.25 GB/s for cuda, host, java, ipc twice as fast. */
    static double time(long bytes, int transport, int family) {
        double gbps = (transport == 1 ? 2.0 : 1.0) / (1 << family);
        return 2 + bytes / (gbps * 1e6);
    }

    private static long hostBytes(long bytes, int transport, int family) {
        return transport == 1 && family == 0 ? 0 : family == 0 ? 4 * bytes : 3 * bytes;
    }
}
