package io.cuwire.bench.ml;

import io.cuwire.bench.harness.Scripts;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * scikit-learn beside {@code cuwire bench estimators} ({@code --peer sklearn}): runs {@code sklearn_peer.py} (a
 * resource of this package, written next to the data) with a Python that has scikit-learn, on the data sets the bench
 * wrote, with the bench's settings, and reads its {@code PEER} lines. Without Python or scikit-learn the peer is
 * skipped, with the reason.
 */
final class SklearnPeer {
    static final String SCRIPT = "sklearn_peer.py";

    private SklearnPeer() {}

    /** One estimator's scikit-learn times, the iterations (or the algorithm it chose) and its settings. */
    record Row(String estimator, double fitMs, double predictMs, String nIter, String settings) {}

    /**
     * What the peer gave: its {@code INFO} line (versions, threads, BLAS) and rows, or why there are none.
     *
     * @param info the peer's INFO line, or {@code null} when skipped
     * @param rows the rows, by estimator
     * @param skipped why the peer did not run, or {@code null}
     */
    record Outcome(String info, Map<String, Row> rows, String skipped) {
        static Outcome skipped(String why) {
            return new Outcome(null, Map.of(), why);
        }
    }

    /**
     * Runs the peer on the data in {@code dir} (written by the bench), echoing its lines to {@code out}.
     *
     * @throws UncheckedIOException if the script cannot be written to {@code dir}
     */
    static Outcome run(
            String python, Path dir, int repeat, int warmup, int neighbors, List<String> estimators, PrintStream out) {
        Path script = Scripts.write(SklearnPeer.class, SCRIPT, dir);
        List<String> cmd = new ArrayList<>(List.of(
                python,
                script.toString(),
                dir.toString(),
                "--repeat",
                Integer.toString(repeat),
                "--warmup",
                Integer.toString(warmup),
                "--neighbors",
                Integer.toString(neighbors),
                "--estimators",
                String.join(",", estimators)));
        Path err = dir.resolve("peer-stderr.txt");
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        } catch (IOException e) {
            return Outcome.skipped("cannot start " + python + " (" + e.getMessage() + ")");
        }
        String info = null;
        Map<String, Row> rows = new HashMap<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                out.println(line);
                out.flush();
                if (line.startsWith("INFO peer=sklearn ")) {
                    info = line.substring("INFO ".length());
                } else if (line.startsWith("PEER ")) {
                    Row row = parse(line);
                    rows.put(row.estimator(), row);
                }
            }
            int code = p.waitFor();
            if (code != 0) {
                String stderr = Files.readString(err, StandardCharsets.UTF_8).strip();
                String why = stderr.contains("No module named 'sklearn'")
                                || stderr.contains("No module named " + "'numpy'")
                        ? python + " has no scikit-learn"
                        : python + " " + SCRIPT + " exited with " + code
                                + (stderr.isEmpty() ? "" : ": " + stderr.substring(stderr.lastIndexOf('\n') + 1));
                return new Outcome(info, Map.copyOf(rows), why);
            }
        } catch (IOException e) {
            p.destroyForcibly();
            return new Outcome(info, Map.copyOf(rows), "reading the peer's output failed: " + e.getMessage());
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            return new Outcome(info, Map.copyOf(rows), "interrupted");
        }
        return new Outcome(info, Map.copyOf(rows), null);
    }

    /** {@code PEER estimator=E fit_ms=F predict_ms=P n_iter=N settings=S}. */
    static Row parse(String line) {
        Map<String, String> f = new HashMap<>();
        for (String part : line.substring("PEER ".length()).split(" ")) {
            int eq = part.indexOf('=');
            if (eq > 0) {
                f.put(part.substring(0, eq), part.substring(eq + 1));
            }
        }
        for (String key : List.of("estimator", "fit_ms", "predict_ms", "n_iter", "settings")) {
            if (!f.containsKey(key)) {
                throw new IllegalArgumentException("peer line without " + key + ": " + line);
            }
        }
        return new Row(
                f.get("estimator"),
                Double.parseDouble(f.get("fit_ms")),
                Double.parseDouble(f.get("predict_ms")),
                f.get("n_iter"),
                f.get("settings"));
    }
}
