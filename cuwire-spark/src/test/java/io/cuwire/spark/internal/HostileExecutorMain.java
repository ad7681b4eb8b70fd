package io.cuwire.spark.internal;

import io.cuwire.cluster.HostileTarget;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.spark.CuwirePlugin;
import io.cuwire.spark.ModelRef;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.io.ObjectInputStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;

/**
 * The Spark executor of the hostile-peer suite's executor role ({@link HostileExecutor}), in a JVM of its own: the
 * cuwire plugin's executor half starts the executor's endpoint as Spark has it start ({@code ExecutorPlugin.init}
 * with what the driver's half hands every executor: the secret), registers it with the driver (the plugin's
 * {@code ask}, answered here as the driver's half answers it), and stops it as an executor stops
 * ({@code ExecutorPlugin.shutdown}). No Spark scheduler runs: the work a task would do comes as lines on standard
 * input, and each is answered by one line {@value #ANSWER}{@code <n> <answer>} on standard output:
 * <table>
 *   <caption>Commands</caption>
 *   <tr><td>{@code <n> accounts}</td><td>the node's device bytes, host bytes and cached models</td></tr>
 *   <tr><td>{@code <n> pools}</td><td>this JVM's direct and mapped buffer pools after a GC</td></tr>
 *   <tr><td>{@code <n> predict <ref> <seed>}</td><td>a task's work: the {@link ModelRef} (Java-serialized, base64,
 *       as Spark ships it to tasks) gives the model, fetched over cuwire when this JVM does not hold it, which
 *       predicts the rows made of {@code seed} ({@link #rows}); the predictions' bits, hex</td></tr>
 *   <tr><td>{@code <n> stop}</td><td>the executor stops: its plugin shuts down, it says so once and exits 0</td></tr>
 * </table>
 * Standard input closing without a stop (the suite's JVM went away) stops the executor too, exiting 3.
 */
public final class HostileExecutorMain {
    /** The start of an answer line; then the command's number and the answer. */
    static final String ANSWER = "@hostile-executor ";
    /** The line the executor prints once its endpoint listens: then its address. */
    static final String LISTENING = ANSWER + "listening ";
    /** What the executor prints as it stops, once: then its exit code and {@code )}. */
    static final String STOPPING = "; stopping (exit ";
    /** The environment variable with the cluster secret, hex (not on the command line). */
    static final String SECRET_ENV = "CUWIRE_HOSTILE_SECRET";

    static final int ROWS = 200;
    static final int COLUMNS = 8;

    private HostileExecutorMain() {}

    /** {@code executorId driverAddress}. */
    public static void main(String[] args) throws Exception {
        String executorId = args[0];
        String driver = args[1];
        SparkConf conf =
                new SparkConf(false).set(CuwirePlugin.HOST, "127.0.0.1").set(CuwirePlugin.DEVICE, "0");
        ExecutorPlugin plugin = new CuwirePlugin().executorPlugin();
        // The keys of the map the driver's half returns from its init, which Spark hands to every executor's half.
        plugin.init(context(conf, executorId, driver), Map.of("secret", System.getenv(SECRET_ENV), "driver", driver));
        Node node = Node.current();
        print(LISTENING + node.address());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.split(" ");
            String answer;
            try {
                answer = switch (w[1]) {
                    case "accounts" ->
                        node.stats(false).deviceBytes() + " "
                                + node.hostMemory().allocatedBytes() + " "
                                + node.stats(false).cachedModels();
                    case "pools" ->
                        HostileTarget.bufferPools().stream()
                                .map(String::valueOf)
                                .collect(Collectors.joining(" "));
                    case "predict" -> predict(node, w[2], Long.parseLong(w[3]));
                    case "stop" -> {
                        plugin.shutdown();
                        yield "stopped, endpoint " + (Node.currentOrNull() == null ? "closed" : "still open");
                    }
                    default -> "failed: no command " + w[1];
                };
            } catch (Exception | AssertionError e) {
                answer = "failed: " + e;
            }
            print(ANSWER + w[0] + " " + answer);
            if (w[1].equals("stop")) {
                print("cuwire executor " + executorId + " shut down" + STOPPING + "0)");
                System.exit(0);
            }
        }
        plugin.shutdown();
        print("cuwire executor " + executorId + ": standard input closed without a stop" + STOPPING + "3)");
        System.exit(3);
    }

    /** The rows every prediction of the suite is made on: {@link #ROWS} by {@link #COLUMNS}, of {@code seed}. */
    static double[] rows(long seed) {
        return MlTesting.gaussian(new SplittableRandom(seed), ROWS * COLUMNS);
    }

    private static String predict(Node node, String ref, long seed) throws Exception {
        ModelRef<?> model;
        try (ObjectInputStream in = new ObjectInputStream(
                new ByteArrayInputStream(Base64.getDecoder().decode(ref)))) {
            model = (ModelRef<?>) in.readObject();
        }
        try (NdArray x = MlTesting.array(node.deviceMemory(), DType.FLOAT64, rows(seed), ROWS, COLUMNS)) {
            double[] y = model.apply(m -> {
                try (NdArray p = ((LinearRegression) m).predict(x)) {
                    return MlTesting.values(p);
                }
            });
            List<String> bits = new ArrayList<>(y.length);
            for (double v : y) {
                bits.add(Long.toHexString(Double.doubleToRawLongBits(v)));
            }
            return String.join(",", bits);
        }
    }

    /** One line, written at once (the node's log lines share the stream). */
    private static void print(String line) {
        System.out.print(line + "\n");
        System.out.flush();
    }

    /**
     * The plugin context of executor {@code executorId}: its configuration, its host, no resources (the device is
     * configured), and the driver's half's answer to its registration ({@code ask}): the driver's address.
     */
    private static PluginContext context(SparkConf conf, String executorId, String driver) {
        return (PluginContext) Proxy.newProxyInstance(
                HostileExecutorMain.class.getClassLoader(),
                new Class<?>[] {PluginContext.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "conf" -> conf;
                    case "executorID" -> executorId;
                    case "hostname" -> "127.0.0.1";
                    case "resources" -> Map.of();
                    case "ask" -> driver;
                    case "send", "metricRegistry" -> null;
                    case "toString" -> "plugin context of executor " + executorId;
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }
}
