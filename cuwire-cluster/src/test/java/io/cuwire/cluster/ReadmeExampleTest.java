package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.linear.LinearRegression;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The README's "Use it from Java" example, verbatim between the markers: it compiles and runs here. */
class ReadmeExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/io/cuwire/cluster/ReadmeExampleTest.java");
    private static final Path README = Path.of("../README.md");

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldFitDistributedBroadcastAndPredictAsTheReadmeShows() {
        // README begin
        double intercept; // what the example keeps, to look at
        float[] first;
        try (LocalCluster cluster = LocalCluster.builder().workers(2).start()) {
            Client client = cluster.client();
            List<NdArray> xs = new ArrayList<>();
            List<NdArray> ys = new ArrayList<>();
            for (int p = 0; p < 4; p++) { // 4 partitions of y = 2 x0 - x1 + 3
                float[] xv = new float[1000 * 2];
                float[] yv = new float[1000];
                for (int i = 0; i < 1000; i++) {
                    xv[2 * i] = i % 17 + p;
                    xv[2 * i + 1] = i % 13;
                    yv[i] = 2 * xv[2 * i] - xv[2 * i + 1] + 3;
                }
                xs.add(NdArray.fromArray(client.memory(), xv, 1000, 2)); // on the client's device
                ys.add(NdArray.fromArray(client.memory(), yv, 1000));
            }
            List<ObjectRef> x = client.scatter(xs); // partition i to worker i mod 2, as device frames
            List<ObjectRef> y = client.scatter(ys);
            try (LinearRegression model = Distributed.fit(client, new LinearRegression(), x, y)) { // merged here
                intercept = model.intercept();
                ModelHandle handle = client.broadcast(model); // again unchanged: only its identity travels
                List<ObjectRef> predicted = Distributed.predict(client, handle, x); // each partition on its worker
                List<NdArray> predictions = client.gather(predicted, NdArray.class); // back on the client's device
                first = predictions.getFirst().toFloatArray();
                predictions.forEach(NdArray::close);
                client.free(predicted);
            }
            client.free(x);
            client.free(y);
            xs.forEach(NdArray::close);
            ys.forEach(NdArray::close);
        }
        // README end
        assertEquals(3, intercept, 1e-3);
        assertEquals(1000, first.length);
        for (int i = 0; i < first.length; i++) {
            assertEquals(2 * (i % 17) - i % 13 + 3, first[i], 1e-3);
        }
    }

    @Test
    void shouldBeTheCodeTheReadmeShows() throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                Files.exists(SOURCE) && Files.exists(README),
                "compares source files: runs from the cuwire-cluster module of a checkout, not from the GPU bundle");
        List<String> code = new ArrayList<>();
        boolean in = false;
        for (String line : Files.readAllLines(SOURCE, StandardCharsets.UTF_8)) {
            if (line.strip().equals("// README end")) {
                break;
            }
            if (in && !line.isBlank()) {
                code.add(line.strip());
            }
            in |= line.strip().equals("// README begin");
        }
        List<String> readme = new ArrayList<>();
        in = false;
        for (String line : Files.readAllLines(README, StandardCharsets.UTF_8)) {
            if (line.startsWith("## ")) {
                in = line.equals("## Use it from Java");
            } else if (in && line.startsWith("```java")) {
                readme.clear();
            }
            if (in && !line.isBlank() && !line.startsWith("```java")) {
                readme.add(line.strip());
            }
        }
        int end = readme.indexOf("```");
        assertEquals(
                String.join("\n", code),
                String.join("\n", readme.subList(0, Math.max(end, 0))),
                "README's Use it from Java block differs from this test's");
    }
}
