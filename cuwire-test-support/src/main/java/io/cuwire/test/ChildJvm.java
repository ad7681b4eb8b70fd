package io.cuwire.test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The one launcher of a child JVM, for the tests and for cuwire-bench's harness: this JVM's {@code java}
 * ({@code java.home}) with {@code --enable-native-access=ALL-UNNAMED}, every {@code cuwire.*} system property of this
 * JVM (so that both processes pick the same device platform, emulated devices and seed), the builder's own
 * properties (which win over those), its JVM options, this JVM's class path, a main class and its arguments.
 *
 * <p>The child's standard output (and its standard error, unless {@link Builder#inheritErrors()} sends that to this
 * JVM's) is read by a daemon thread as it comes: every line is kept ({@link #output()}), handed to the builder's
 * {@link Builder#onLine line consumer}, and matched by {@link #awaitLine}, so a child never blocks on a full pipe.
 *
 * <p>Owns the process: {@link #close()} closes the child's standard input, gives it the builder's
 * {@link Builder#closeGrace grace} (none by default) to end by itself, then kills it and waits for it to go. Closing
 * twice is harmless. Thread-safe.
 */
public final class ChildJvm implements AutoCloseable {
    private final Process process;
    private final List<String> command;
    private final String name;
    private final Duration closeGrace;
    private final List<String> lines = new ArrayList<>();
    private final Thread reader;
    private boolean ended;

    private ChildJvm(Builder b, Process process, List<String> command) {
        this.process = process;
        this.command = command;
        this.name = b.main;
        this.closeGrace = b.closeGrace;
        Consumer<String> onLine = b.onLine;
        this.reader =
                Thread.ofPlatform().daemon().name("child-jvm-" + process.pid()).start(() -> read(onLine));
    }

    /** A builder of a child JVM that runs {@code main}'s {@code main} method. */
    public static Builder builder(Class<?> main) {
        return new Builder(main.getName());
    }

    /** As {@link #builder(Class)}, by the main class's binary name. */
    public static Builder builder(String mainClassName) {
        return new Builder(Objects.requireNonNull(mainClassName, "mainClassName"));
    }

    /** The {@code java} launcher of this JVM's runtime. */
    public static String javaLauncher() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private void read(Consumer<String> onLine) {
        try (BufferedReader r =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                synchronized (lines) {
                    lines.add(line);
                    lines.notifyAll();
                }
                onLine.accept(line);
            }
        } catch (IOException ignored) {
            // the child is gone: its exit is what the waiting calls report
        } finally {
            synchronized (lines) {
                ended = true;
                lines.notifyAll();
            }
        }
    }

    /**
     * The first line the child printed that starts with {@code prefix}, waiting up to {@code timeout} for it.
     *
     * @throws IOException naming the child, its exit code and its output when it ended its output without such a
     *     line, or when {@code timeout} passed first (the child is left running: {@link #close()} stops it)
     */
    public String awaitLine(String prefix, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int seen = 0;
        synchronized (lines) {
            while (true) {
                for (; seen < lines.size(); seen++) {
                    if (lines.get(seen).startsWith(prefix)) {
                        return lines.get(seen);
                    }
                }
                long left = deadline - System.nanoTime();
                if (ended || left <= 0) {
                    break;
                }
                TimeUnit.NANOSECONDS.timedWait(lines, left);
            }
        }
        throw new IOException("the child JVM " + name + " printed no line starting with '" + prefix + "' "
                + (isEnded() ? "before it ended (exit " + exitCode() + ")" : "within " + timeout) + "; command: "
                + String.join(" ", command) + "; its output:\n" + output());
    }

    /**
     * Waits up to {@code timeout} for the child to exit; its exit code, with all its output read.
     *
     * @throws IOException naming the child and its output when it is still running after {@code timeout}
     */
    public int awaitExit(Duration timeout) throws IOException, InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IOException(
                    "the child JVM " + name + " did not exit within " + timeout + "; its output:\n" + output());
        }
        reader.join(TimeUnit.SECONDS.toMillis(10));
        return process.exitValue();
    }

    private boolean isEnded() {
        synchronized (lines) {
            return ended;
        }
    }

    private String exitCode() {
        try {
            return process.waitFor(10, TimeUnit.SECONDS) ? Integer.toString(process.exitValue()) : "still running";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }

    /** Every line the child printed so far, one per line. */
    public String output() {
        synchronized (lines) {
            return lines.isEmpty() ? "" : String.join("\n", lines) + "\n";
        }
    }

    /** The lines the child printed so far. */
    public List<String> lines() {
        synchronized (lines) {
            return List.copyOf(lines);
        }
    }

    /** The child process. */
    public Process process() {
        return process;
    }

    /** The child process's handle. */
    public ProcessHandle handle() {
        return process.toHandle();
    }

    /** The command line that started it (environment variables, where secrets go, are not on it). */
    public List<String> command() {
        return command;
    }

    /** Sends the child a signal by name ({@code STOP}, {@code CONT}, {@code KILL}, ...) with {@code kill(1)}. */
    public void signal(String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
                .inheritIO()
                .start();
        if (kill.waitFor() != 0) {
            throw new IOException("kill -" + signal + " " + process.pid() + " failed (exit " + kill.exitValue() + ")");
        }
    }

    /** Closes the child's standard input, waits its grace, then kills it and waits up to 10 s for it to go. */
    @Override
    public void close() {
        try {
            process.getOutputStream().close();
        } catch (IOException ignored) {
            // the child is gone already
        }
        try {
            if (closeGrace.isPositive()) {
                process.waitFor(closeGrace.toMillis(), TimeUnit.MILLISECONDS);
            }
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }

    @Override
    public String toString() {
        return "ChildJvm[" + name + ", pid " + process.pid() + "]";
    }

    /** What a child JVM runs with; {@link #start()} starts it. Not thread-safe. */
    public static final class Builder {
        private final String main;
        private final List<String> args = new ArrayList<>();
        private final List<String> jvmOptions = new ArrayList<>();
        private final Map<String, String> properties = new LinkedHashMap<>();
        private final Map<String, String> environment = new LinkedHashMap<>();
        private final List<String> wrapper = new ArrayList<>();
        private String input;
        private boolean inheritErrors;
        private boolean nativeAccess = true;
        private boolean inheritProperties = true;
        private Duration closeGrace = Duration.ZERO;
        private Consumer<String> onLine = line -> {};

        private Builder(String main) {
            this.main = main;
        }

        /** Arguments of the main method, added to those given before. */
        public Builder args(String... more) {
            args.addAll(List.of(more));
            return this;
        }

        /** As {@link #args(String...)}. */
        public Builder args(List<String> more) {
            args.addAll(more);
            return this;
        }

        /** JVM options (e.g. {@code -Xmx2g}), after the inherited properties, so that they win over them. */
        public Builder jvmOptions(String... more) {
            jvmOptions.addAll(List.of(more));
            return this;
        }

        /** As {@link #jvmOptions(String...)}. */
        public Builder jvmOptions(List<String> more) {
            jvmOptions.addAll(more);
            return this;
        }

        /** A system property of the child, in place of this JVM's value of it; {@code null} leaves it unset. */
        public Builder property(String key, String value) {
            properties.put(key, value);
            return this;
        }

        /**
         * An environment variable of the child (the place for secrets: the command line is visible to all);
         * {@code null} removes it from what the child inherits (e.g. {@code JAVA_TOOL_OPTIONS}, for a child free of
         * the environment's JVM options).
         */
        public Builder env(String key, String value) {
            environment.put(key, value);
            return this;
        }

        /** As {@link #env(String, String)}, for each entry. */
        public Builder env(Map<String, String> variables) {
            environment.putAll(variables);
            return this;
        }

        /** Text written to the child's standard input as it starts, which is then closed. */
        public Builder input(String text) {
            this.input = text;
            return this;
        }

        /**
         * A command that runs the JVM, before the {@code java} launcher: e.g. {@code unshare -Urm sh -c SCRIPT sh}
         * (the script ends in {@code exec "$@"}).
         */
        public Builder wrapper(String... command) {
            wrapper.addAll(List.of(command));
            return this;
        }

        /** Leaves {@code --enable-native-access=ALL-UNNAMED} off (for a test of what happens without it). */
        public Builder withoutNativeAccess() {
            this.nativeAccess = false;
            return this;
        }

        /** Passes none of this JVM's {@code cuwire.*} properties on: only the builder's own. */
        public Builder withoutInheritedProperties() {
            this.inheritProperties = false;
            return this;
        }

        /** The child's standard error goes to this JVM's instead of into its output. */
        public Builder inheritErrors() {
            this.inheritErrors = true;
            return this;
        }

        /** How long {@link ChildJvm#close()} lets the child end by itself (its input closed) before killing it. */
        public Builder closeGrace(Duration grace) {
            this.closeGrace = Objects.requireNonNull(grace, "grace");
            return this;
        }

        /** Called on the reading thread with each line the child prints, in order. */
        public Builder onLine(Consumer<String> consumer) {
            this.onLine = Objects.requireNonNull(consumer, "consumer");
            return this;
        }

        /** The command line {@link #start()} runs. */
        public List<String> command() {
            List<String> cmd = new ArrayList<>(wrapper);
            cmd.add(javaLauncher());
            if (nativeAccess) {
                cmd.add("--enable-native-access=ALL-UNNAMED");
            }
            for (String key : System.getProperties().stringPropertyNames().stream()
                    .sorted()
                    .toList()) {
                if (inheritProperties && key.startsWith("cuwire.") && !properties.containsKey(key)) {
                    cmd.add("-D" + key + "=" + System.getProperty(key));
                }
            }
            properties.forEach((k, v) -> {
                if (v != null) {
                    cmd.add("-D" + k + "=" + v);
                }
            });
            cmd.addAll(jvmOptions);
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), main));
            cmd.addAll(args);
            return cmd;
        }

        /** Starts the child. */
        public ChildJvm start() throws IOException {
            List<String> cmd = List.copyOf(command());
            ProcessBuilder pb = new ProcessBuilder(cmd);
            if (inheritErrors) {
                pb.redirectError(ProcessBuilder.Redirect.INHERIT);
            } else {
                pb.redirectErrorStream(true);
            }
            environment.forEach((k, v) -> {
                if (v == null) {
                    pb.environment().remove(k);
                } else {
                    pb.environment().put(k, v);
                }
            });
            Process p = pb.start();
            ChildJvm child = new ChildJvm(this, p, cmd);
            if (input != null) {
                try (OutputStream in = p.getOutputStream()) {
                    in.write(input.getBytes(StandardCharsets.UTF_8));
                } catch (IOException e) {
                    child.close();
                    throw new IOException(
                            "could not write the standard input of the child JVM " + main + ": " + e + "; its output:\n"
                                    + child.output(),
                            e);
                }
            }
            return child;
        }
    }
}
