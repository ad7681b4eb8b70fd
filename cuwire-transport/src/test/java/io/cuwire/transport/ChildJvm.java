package io.cuwire.transport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A {@link TransportConformanceSuite.Peer} ({@link ConformancePeer} or another main class) in a child JVM: this JVM's
 * java binary and class path, the {@code cuwire.*} system properties passed on (so both processes pick the same
 * device platform), output to a log file.
 */
final class ChildJvm implements TransportConformanceSuite.Peer {
    private final Process process;
    private final Path log;

    private ChildJvm(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /** Starts {@code mainClass} with {@code args}. */
    static ChildJvm start(Class<?> mainClass, String... args) throws IOException {
        return start(mainClass, Map.of(), args);
    }

    /** Starts {@code mainClass} with {@code args} and extra environment variables {@code env}. */
    static ChildJvm start(Class<?> mainClass, Map<String, String> env, String... args) throws IOException {
        return start(mainClass, env, List.of(), args);
    }

    /**
     * Starts {@code mainClass} with {@code args}, extra environment variables {@code env} and JVM options
     * {@code jvmOptions} after the usual ones (so that they win over them).
     */
    static ChildJvm start(Class<?> mainClass, Map<String, String> env, List<String> jvmOptions, String... args)
            throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElseThrow());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-XX:+UseSerialGC");
        cmd.addAll(jvmOptions);
        for (String key : System.getProperties().stringPropertyNames()) {
            if (key.startsWith("cuwire.")) {
                cmd.add("-D" + key + "=" + System.getProperty(key));
            }
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass.getName());
        cmd.addAll(List.of(args));
        Path log = Files.createTempFile("cuwire-peer", ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        return new ChildJvm(pb.start(), log);
    }

    @Override
    public int await(Duration timeout) throws Exception {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("peer did not finish in " + timeout + ":\n" + output());
        }
        return process.exitValue();
    }

    @Override
    public String output() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(no output: " + e + ")";
        }
    }

    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
            Files.deleteIfExists(log);
        } catch (InterruptedException | IOException e) {
            Thread.currentThread().interrupt();
        }
    }
}
