package io.cuwire.cluster;

import io.cuwire.memory.Devices;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A worker JVM started as {@link LocalCluster} starts one ({@link Worker}'s main on device 0, the secret on standard
 * input), for tests that connect to it themselves; every line it prints is kept.
 */
final class WorkerProcess implements AutoCloseable {
    private final Process process;
    private final List<String> output = new ArrayList<>();
    private final CompletableFuture<String> address = new CompletableFuture<>();
    private final CompletableFuture<Void> drained = new CompletableFuture<>();

    private WorkerProcess(Process process) {
        this.process = process;
        Thread.ofPlatform().daemon().name("worker-process-output").start(this::read);
    }

    /**
     * Starts worker {@code index} listening at {@code scheme://127.0.0.1:0}, with the system properties
     * {@code properties} and this JVM's emulated-device settings.
     */
    static WorkerProcess start(int index, String scheme, byte[] secret, Map<String, String> properties)
            throws IOException {
        return start(index, scheme, secret, properties, List.of());
    }

    /** As {@link #start(int, String, byte[], Map)}, with {@code jvmOptions} before the class path. */
    static WorkerProcess start(int index, String scheme, byte[] secret, Map<String, String> properties,
            List<String> jvmOptions) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC",
                "-D" + Devices.PLATFORM_PROPERTY + "=" + Devices.platform()));
        for (String p : List.of("cuwire.emulated.devices", "cuwire.emulated.memoryBytes", "cuwire.emulated.dir")) {
            String v = properties.containsKey(p) ? properties.get(p) : System.getProperty(p);
            if (v != null) {
                cmd.add("-D" + p + "=" + v);
            }
        }
        properties.forEach((k, v) -> {
            if (!k.startsWith("cuwire.emulated.")) {
                cmd.add("-D" + k + "=" + v);
            }
        });
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Worker.class.getName(),
                Integer.toString(index), "0", scheme + "://127.0.0.1:0"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write((HexFormat.of().formatHex(secret) + "\n").getBytes(StandardCharsets.US_ASCII));
        }
        return new WorkerProcess(p);
    }

    private void read() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (!address.isDone() && line.startsWith(Worker.LISTENING + " ")) {
                    address.complete(line.substring(Worker.LISTENING.length() + 1).strip());
                }
                synchronized (output) {
                    output.add(line);
                }
            }
        } catch (IOException e) {
            // the process is gone
        }
        address.completeExceptionally(new IOException("the worker exited before listening: " + output()));
        drained.complete(null);
    }

    /** The address it listens at, once it does (within 60 s). */
    String address() throws Exception {
        return address.get(60, TimeUnit.SECONDS);
    }

    /** The port of {@link #address()}. */
    int port() throws Exception {
        String a = address();
        return Integer.parseInt(a.substring(a.lastIndexOf(':') + 1));
    }

    ProcessHandle handle() {
        return process.toHandle();
    }

    /** Its exit code, once it exited (within {@code timeout}); all its output has been read by then. */
    int awaitExit(Duration timeout) throws Exception {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("worker did not exit within " + timeout + "; its output: " + output());
        }
        drained.get(10, TimeUnit.SECONDS);
        return process.exitValue();
    }

    /** The lines it printed so far. */
    List<String> output() {
        synchronized (output) {
            return List.copyOf(output);
        }
    }

    /** The lines it printed so far that contain {@code text}. */
    List<String> lines(String text) {
        return output().stream().filter(l -> l.contains(text)).toList();
    }

    /** Sends the process {@code SIGSTOP} ({@code "STOP"}) or {@code SIGCONT} ({@code "CONT"}). */
    void signal(String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IOException("kill -" + signal + " " + process.pid() + " failed");
        }
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}
