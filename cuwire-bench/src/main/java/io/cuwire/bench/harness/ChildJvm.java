package io.cuwire.bench.harness;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The benchmarks' one launcher of a child JVM (a transfer's receiver, a model-transfer worker): this JVM's
 * {@code java} with {@code --enable-native-access=ALL-UNNAMED}, every {@code cuwire.*} system property of this
 * JVM, the given JVM options, this JVM's class path, a main class and its arguments; the run's secret in
 * {@link Secrets#VARIABLE}; its standard error goes to this JVM's. The child announces itself with one line that
 * starts with {@code READY } on its standard output, which {@link #start} waits for.
 *
 * <p>Owns the process: {@link #close()} closes the child's standard input, waits up to 60 s for it to end (a child
 * ends when its standard input or the connections it serves close), then kills it.
 */
public final class ChildJvm implements AutoCloseable {
    private final Process process;
    private final BufferedReader stdout;
    private final List<String> ready;
    private final List<String> command;

    private ChildJvm(Process process, BufferedReader stdout, List<String> ready, List<String> command) {
        this.process = process;
        this.stdout = stdout;
        this.ready = ready;
        this.command = command;
    }

    /**
     * Starts {@code main} in a new JVM and waits for its {@code READY} line; lines before it are skipped.
     *
     * @param jvmOptions options before the class path, e.g. {@code -Xmx2g}
     * @param secret the run's secret, for {@link Secrets#fromEnvironment()} in the child
     * @throws IOException naming the command and the exit code when the child ends before its {@code READY} line
     */
    public static ChildJvm start(Class<?> main, List<String> jvmOptions, byte[] secret, String... args)
            throws IOException {
        List<String> cmd = new ArrayList<>(
                List.of(ProcessHandle.current().info().command().orElseThrow(), "--enable-native-access=ALL-UNNAMED"));
        for (String key : System.getProperties().stringPropertyNames()) {
            if (key.startsWith("cuwire.")) {
                cmd.add("-D" + key + "=" + System.getProperty(key));
            }
        }
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().put(Secrets.VARIABLE, Secrets.hex(secret));
        Process p = pb.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        do {
            line = in.readLine();
        } while (line != null && !line.startsWith("READY "));
        if (line == null) {
            p.destroyForcibly();
            throw new IOException("the child JVM " + main.getSimpleName() + " ended before it was ready (exit "
                    + exitCode(p) + "): " + String.join(" ", cmd));
        }
        return new ChildJvm(p, in, List.of(line.split(" ")), List.copyOf(cmd));
    }

    /** The words of the child's {@code READY} line after {@code READY}: the addresses it announced. */
    public List<String> ready() {
        return ready.subList(1, ready.size());
    }

    /** The child's standard output after its {@code READY} line. */
    public BufferedReader stdout() {
        return stdout;
    }

    /** The child process. */
    public Process process() {
        return process;
    }

    /** The command line that started it (the secret is not on it). */
    public List<String> command() {
        return command;
    }

    /** Closes the child's standard input, waits up to 60 s for it to end, then kills it. */
    @Override
    public void close() {
        try {
            process.getOutputStream().close();
        } catch (IOException e) {
            // the child is gone already: its exit is what we wait for
        }
        try {
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }

    private static String exitCode(Process p) {
        try {
            return p.waitFor(10, TimeUnit.SECONDS) ? Integer.toString(p.exitValue()) : "still running, killed";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }
}
