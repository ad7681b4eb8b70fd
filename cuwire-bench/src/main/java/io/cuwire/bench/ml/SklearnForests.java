package io.cuwire.bench.ml;

import io.cuwire.bench.harness.Scripts;
import io.cuwire.test.SklearnPython;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * scikit-learn's {@code RandomForestClassifier} / {@code RandomForestRegressor} on cuwire's data, in a Python child
 * process ({@code sklearn_forest.py}, a resource beside this class), for the forest rows of {@code bench estimators}
 * and the quality tests. The interpreter: {@link #python()}. This is forest-specific on purpose: it times only
 * forests, with the bench's trees, depth and features per split.
 */
public final class SklearnForests {
    /** The system property naming the Python interpreter. */
    public static final String PYTHON_PROPERTY = SklearnPython.PYTHON_PROPERTY;

    private static final Pattern LINE =
            Pattern.compile("SKLEARN version=(\\S+) fit_ms=(\\S+) predict_ms=(\\S+) score=(\\S+)");

    private SklearnForests() {}

    /** One run: the version, the median fit and predict times, and the held-out (or training) score. */
    public record Run(String version, double fitMs, double predictMs, double score) {}

    /** The interpreter: {@link SklearnPython#python()}, the one default of every scikit-learn peer. */
    public static String python() {
        return SklearnPython.python();
    }

    /** Why scikit-learn cannot be run here, or empty when it can ({@link SklearnPython#unavailable()}). */
    public static Optional<String> unavailable() {
        return SklearnPython.unavailable();
    }

    /**
     * Fits scikit-learn's forest on the first {@code train} rows of row-major {@code x} ({@code rows x cols}) and
     * {@code y} (labels or values), {@code repeat} times, with every core ({@code n_jobs=-1}), then predicts every row.
     *
     * @param classifier a classifier (labels in {@code y}) or a regressor
     * @param maxFeatures the features tried per split: 0 for {@code sqrt}, else a share in (0, 1]
     * @throws UncheckedIOException if the data cannot be written or the process fails, with its output
     */
    public static Run run(
            boolean classifier,
            double[] x,
            int rows,
            int cols,
            double[] y,
            int train,
            int trees,
            int depth,
            double maxFeatures,
            long seed,
            int repeat) {
        if (x.length != (long) rows * cols || y.length != rows || train < 1 || train > rows) {
            throw new IllegalArgumentException("sklearn forest: x of " + x.length + " values, y of " + y.length
                    + " (expected: " + rows + " x " + cols + " and " + rows + "), train " + train
                    + " (expected: 1 .. " + rows + ")");
        }
        Path dir = null;
        try {
            dir = Files.createTempDirectory("cuwire-sklearn-forest");
            write(dir.resolve("x.f64"), x);
            write(dir.resolve("y.f64"), y);
            Path script = Scripts.write(SklearnForests.class, "sklearn_forest.py", dir);
            List<String> cmd = new ArrayList<>(List.of(
                    python(),
                    script.toString(),
                    dir.toString(),
                    classifier ? "classifier" : "regressor",
                    Integer.toString(rows),
                    Integer.toString(cols),
                    Integer.toString(train),
                    Integer.toString(trees),
                    Integer.toString(depth),
                    maxFeatures == 0 ? "sqrt" : Double.toString(maxFeatures),
                    Long.toString(seed),
                    Integer.toString(repeat)));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int rc = p.waitFor();
            Matcher m = LINE.matcher(out);
            if (rc != 0 || !m.find()) {
                throw new UncheckedIOException(
                        new IOException("scikit-learn's forest exited " + rc + ": " + out.strip()));
            }
            return new Run(
                    m.group(1),
                    Double.parseDouble(m.group(2)),
                    Double.parseDouble(m.group(3)),
                    Double.parseDouble(m.group(4)));
        } catch (IOException e) {
            throw new UncheckedIOException("sklearn forest: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("sklearn forest: interrupted", e);
        } finally {
            if (dir != null) {
                delete(dir);
            }
        }
    }

    private static void write(Path file, double[] values) throws IOException {
        int chunk = 1 << 20;
        ByteBuffer b = ByteBuffer.allocate(chunk * Double.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (int from = 0; from < values.length; from += chunk) {
                int count = Math.min(chunk, values.length - from);
                b.clear();
                b.asDoubleBuffer().put(values, from, count);
                b.limit(count * Double.BYTES);
                while (b.hasRemaining()) {
                    ch.write(b);
                }
            }
        }
    }

    private static void delete(Path dir) {
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            System.err.println(String.format(Locale.ROOT, "WARN could not delete %s: %s", dir, e.getMessage()));
        }
    }
}
