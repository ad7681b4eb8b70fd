package io.cuwire.bench.harness;

import io.cuwire.test.ChildJvm;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

/**
 * A benchmark's child JVM (a transfer's receiver, a model-transfer worker), started by the project's one launcher,
 * {@link ChildJvm}: the run's secret in {@link Secrets#VARIABLE} (never on the command line), the child's standard
 * error to this JVM's, and the words of the line starting with {@code READY } that the child prints once it listens.
 *
 * <p>Owns the process: {@link #close()} closes the child's standard input and gives it 60 s to end by itself (a
 * child ends when its standard input or the connections it serves close) before killing it.
 *
 * @param jvm the child
 * @param ready the words of its {@code READY} line after {@code READY}: the addresses it announced
 */
public record BenchChild(ChildJvm jvm, List<String> ready) implements AutoCloseable {
    /** How long a child may take to print its {@code READY} line (a cold JVM on a loaded machine, a GPU context). */
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(120);

    /** As {@link #start(Class, List, byte[], Consumer, String...)}, keeping the child's output lines only. */
    public static BenchChild start(Class<?> main, List<String> jvmOptions, byte[] secret, String... args)
            throws IOException {
        return start(main, jvmOptions, secret, line -> {}, args);
    }

    /**
     * Starts {@code main} in a new JVM and waits for its {@code READY} line.
     *
     * @param jvmOptions options before the class path, e.g. {@code -Xmx2g}
     * @param secret the run's secret, for {@link Secrets#fromEnvironment()} in the child
     * @param onLine called with each line the child prints, in order, from its first
     * @throws IOException naming the child, its command, exit code and output when it ends (or takes 120 s) before
     *     its {@code READY} line
     */
    public static BenchChild start(
            Class<?> main, List<String> jvmOptions, byte[] secret, Consumer<String> onLine, String... args)
            throws IOException {
        ChildJvm jvm = ChildJvm.builder(main)
                .jvmOptions(jvmOptions)
                .env(Secrets.VARIABLE, Secrets.hex(secret))
                .args(args)
                .inheritErrors()
                .closeGrace(Duration.ofSeconds(60))
                .onLine(onLine)
                .start();
        try {
            String line = jvm.awaitLine("READY ", READY_TIMEOUT);
            List<String> words = List.of(line.split(" "));
            return new BenchChild(jvm, words.subList(1, words.size()));
        } catch (IOException | RuntimeException e) {
            jvm.close();
            throw e;
        } catch (InterruptedException e) {
            jvm.close();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for " + main.getSimpleName() + " to be ready", e);
        }
    }

    /** The child process. */
    public Process process() {
        return jvm.process();
    }

    /** Closes the child's standard input, gives it 60 s to end, then kills it. */
    @Override
    public void close() {
        jvm.close();
    }
}
