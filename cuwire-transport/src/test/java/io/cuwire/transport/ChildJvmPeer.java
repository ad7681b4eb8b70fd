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

/** A {@link ConformancePeer} (or another main class) in a child JVM on this class path, its output in a file. */
final class ChildJvmPeer implements TransportConformanceSuite.Peer {
    private final Process process;
    private final Path log;

    private ChildJvmPeer(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /** Starts {@link ConformancePeer} with {@code args}. */
    static ChildJvmPeer start(String... args) throws IOException {
        return start(ConformancePeer.class, Map.of(), args);
    }

    /** Starts {@code main} with {@code args} and extra environment variables {@code env}. */
    static ChildJvmPeer start(Class<?> main, Map<String, String> env, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElseThrow());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        Path log = Files.createTempFile("cuwire-peer", ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        return new ChildJvmPeer(pb.start(), log);
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
