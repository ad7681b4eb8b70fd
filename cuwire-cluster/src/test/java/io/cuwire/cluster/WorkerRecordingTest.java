package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A worker JVM given a JFR recording to a file (as the README says to profile one) writes it when its cluster closes:
 * the client must not kill a worker that closed its connection because it was told to shut down.
 */
class WorkerRecordingTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldWriteTheWorkersJfrRecordingWhenTheClusterCloses() throws Exception {
        Path dir = Files.createTempDirectory("cuwire-worker-jfr");
        Path file = dir.resolve("worker.jfr");
        try {
            LocalCluster cluster = LocalCluster.builder()
                    .workers(1)
                    .jvmOptions(List.of(
                            "-Xlog:jfr+startup=error",
                            "-XX:StartFlightRecording=filename=" + file
                                    + ",settings=default,+io.cuwire.cluster.Dispatch#enabled=true"))
                    .start();
            try (cluster) {
                cluster.client().workerStats(0).get(60, TimeUnit.SECONDS); // a request the worker's endpoint records
            }
            assertTrue(
                    Files.exists(file) && Files.size(file) > 0,
                    "the worker's recording " + file + " is missing or " + "empty after the cluster closed");
            List<RecordedEvent> events = RecordingFile.readAllEvents(file);
            assertTrue(
                    events.stream().anyMatch(e -> e.getEventType().getName().equals("io.cuwire.cluster.Dispatch")),
                    "no Dispatch event in the worker's recording of " + events.size() + " events");
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }
}
