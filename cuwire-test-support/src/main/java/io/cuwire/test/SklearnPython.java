package io.cuwire.test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The one way cuwire's tests and benchmarks find a Python with scikit-learn ({@link #python()}), say why there is
 * none ({@link #unavailable()}: the reason a test skips with) and run a script with it ({@link #run}).
 */
public final class SklearnPython {
    /** The system property naming the Python interpreter. */
    public static final String PYTHON_PROPERTY = "cuwire.bench.python";

    /** The interpreters tried, in order, when {@value #PYTHON_PROPERTY} is not set. */
    private static final List<String> CANDIDATES = List.of("python3", "/usr/bin/python3");
    /** The interpreter found, once looked for. */
    private static volatile String found;

    private SklearnPython() {}

    /**
     * The interpreter used: {@value #PYTHON_PROPERTY} when set, else the first of {@code python3} on the path and
     * {@code /usr/bin/python3} that imports scikit-learn and NumPy (a {@code python3} of pyenv or a virtual
     * environment first on the path may have none, while Debian's {@code python3-sklearn} installs for
     * {@code /usr/bin/python3}; elsewhere only the path's may have it), else {@code python3}.
     */
    public static String python() {
        String given = System.getProperty(PYTHON_PROPERTY);
        if (given != null && !given.isBlank()) {
            return given.strip();
        }
        String f = found;
        if (f == null) {
            f = CANDIDATES.stream()
                    .filter(c -> unavailable(c).isEmpty())
                    .findFirst()
                    .orElse(CANDIDATES.get(0));
            found = f;
        }
        return f;
    }

    /** Why scikit-learn cannot be run here, or empty when it can. */
    public static Optional<String> unavailable() {
        return unavailable(python());
    }

    /** Why {@code python} cannot run scikit-learn, or empty when it can. */
    private static Optional<String> unavailable(String python) {
        return cannotImport(python, "sklearn, numpy", "scikit-learn");
    }

    /**
     * Why {@link #python()} cannot import {@code modules} (as an {@code import} statement lists them), or empty when
     * it can: for a peer that needs more than scikit-learn (Dask's {@code distributed}).
     *
     * @param what the modules as the reason names them
     */
    public static Optional<String> cannotImport(String modules, String what) {
        return cannotImport(python(), modules, what);
    }

    private static Optional<String> cannotImport(String python, String modules, String what) {
        try {
            Process p = new ProcessBuilder(python, "-c", "import " + modules)
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return Optional.of(python + " did not import " + what + " within 60 s");
            }
            return p.exitValue() == 0
                    ? Optional.empty()
                    : Optional.of(python + " cannot import " + what + ": "
                            + out.lines().reduce((a, b) -> b).orElse("exit " + p.exitValue()));
        } catch (IOException e) {
            return Optional.of("cannot start " + python + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.of("interrupted while starting " + python);
        }
    }

    /**
     * Runs {@link #python()} on {@code script} with {@code args} in {@code dir}; returns its output (stdout and stderr
     * together).
     *
     * @throws IllegalStateException naming the script, with its exit status and output, if it fails or outlives
     *     {@code timeout}
     */
    public static String run(Path dir, Path script, Duration timeout, String... args) {
        List<String> cmd = new ArrayList<>(List.of(python(), script.toString()));
        cmd.addAll(List.of(args));
        try {
            Path log = Files.createTempFile(dir, "python-", ".log");
            Process p = new ProcessBuilder(cmd)
                    .directory(dir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            boolean done = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!done) {
                p.destroyForcibly().waitFor();
            }
            String out = Files.readString(log, StandardCharsets.UTF_8);
            if (!done || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", cmd)
                        + (done ? " exited with " + p.exitValue() : " ran past " + timeout.toSeconds() + " s") + ":\n"
                        + out.strip());
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + String.join(" ", cmd) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + String.join(" ", cmd), e);
        }
    }
}
