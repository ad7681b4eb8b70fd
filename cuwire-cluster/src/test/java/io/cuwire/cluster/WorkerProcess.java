package io.cuwire.cluster;

import io.cuwire.memory.Devices;
import io.cuwire.test.ChildJvm;
import java.io.IOException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * A worker JVM started as {@link LocalCluster} starts one ({@link Worker}'s main on device 0, the secret on standard
 * input), for tests that connect to it themselves; every line it prints is kept. A {@link ChildJvm}: it gets this
 * JVM's {@code cuwire.*} properties (the emulated-device settings among them) and the device platform this JVM chose.
 */
final class WorkerProcess implements AutoCloseable {
    private static final Duration LISTEN_TIMEOUT = Duration.ofSeconds(60);

    private final ChildJvm child;

    private WorkerProcess(ChildJvm child) {
        this.child = child;
    }

    /**
     * Starts worker {@code index} listening at {@code scheme://127.0.0.1:0}, with the system properties
     * {@code properties} (in place of this JVM's) and this JVM's {@code cuwire.*} properties.
     */
    static WorkerProcess start(int index, String scheme, byte[] secret, Map<String, String> properties)
            throws IOException {
        return start(index, scheme, secret, properties, List.of());
    }

    /** As {@link #start(int, String, byte[], Map)}, with {@code jvmOptions} after the properties. */
    static WorkerProcess start(
            int index, String scheme, byte[] secret, Map<String, String> properties, List<String> jvmOptions)
            throws IOException {
        ChildJvm.Builder b = ChildJvm.builder(Worker.class)
                .property(Devices.PLATFORM_PROPERTY, Devices.platform())
                .jvmOptions("-XX:+UseSerialGC")
                .jvmOptions(jvmOptions)
                .args(Integer.toString(index), "0", scheme + "://127.0.0.1:0")
                .input(HexFormat.of().formatHex(secret) + "\n");
        properties.forEach(b::property);
        return new WorkerProcess(b.start());
    }

    /** The address it listens at, once it does (within 60 s). */
    String address() throws Exception {
        return child.awaitLine(Worker.LISTENING + " ", LISTEN_TIMEOUT)
                .substring(Worker.LISTENING.length() + 1)
                .strip();
    }

    /** The port of {@link #address()}. */
    int port() throws Exception {
        String a = address();
        return Integer.parseInt(a.substring(a.lastIndexOf(':') + 1));
    }

    ProcessHandle handle() {
        return child.handle();
    }

    /** Its exit code, once it exited (within {@code timeout}); all its output has been read by then. */
    int awaitExit(Duration timeout) throws Exception {
        return child.awaitExit(timeout);
    }

    /** The lines it printed so far. */
    List<String> output() {
        return child.lines();
    }

    /** The lines it printed so far that contain {@code text}. */
    List<String> lines(String text) {
        return output().stream().filter(l -> l.contains(text)).toList();
    }

    /** Sends the process {@code SIGSTOP} ({@code "STOP"}) or {@code SIGCONT} ({@code "CONT"}). */
    void signal(String signal) throws IOException, InterruptedException {
        child.signal(signal);
    }

    @Override
    public void close() {
        child.close();
    }
}
