package io.cuwire.spark;

import io.cuwire.memory.Device;
import io.cuwire.memory.Devices;
import io.cuwire.spark.internal.Node;
import io.cuwire.spark.internal.TransportMode;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.apache.spark.resource.ResourceInformation;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;

/**
 * The Spark plugin ({@code spark.plugins=io.cuwire.spark.CuwirePlugin}) that starts a cuwire endpoint in the driver
 * and in every executor, closed when the executor stops. Executors register their endpoint's address with the
 * driver; models broadcast with {@link CuwireSpark#broadcast} move between these endpoints.
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>key</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@value #SECRET}</td><td>generated</td><td>the cluster secret (hex, at least 16 bytes) every cuwire
 *       connection proves; when unset the driver makes one and hands it to the executors through Spark's plugin
 *       channel (protect that with {@code spark.authenticate})</td></tr>
 *   <tr><td>{@value #DEVICE}</td><td>the executor's first GPU, else 0</td><td>the device ordinal of the
 *       executor's endpoint; without it, the first address of the {@code gpu} resource Spark assigned; either is
 *       taken modulo the devices of the platform that opened (so addresses may name executor slots)</td></tr>
 *   <tr><td>{@value #HOST}</td><td>the driver's {@code spark.driver.host} (else {@code 127.0.0.1}); an executor's
 *       host as its BlockManager knows it</td><td>the address the endpoints listen on (on a cluster the executors'
 *       default is a non-loopback address)</td></tr>
 *   <tr><td>{@value #TRANSPORT}</td><td>{@code auto}</td><td>how a fetch picks its transport: {@code auto} takes CUDA
 *       IPC (device frames copied device to device, none through host memory) when the endpoint asked listens on
 *       it, runs on the same host (host name and boot id) and this endpoint's device exports IPC handles, else TCP
 *       (device frames staged through host memory), and falls back to TCP when an IPC connection fails;
 *       {@code tcp} always TCP (the endpoints listen on TCP only); {@code ipc} CUDA IPC only, a fetch that cannot
 *       use it fails saying why. A job's local property of that name ({@code sc.setLocalProperty}) overrides it for
 *       the fetches of the job's tasks</td></tr>
 * </table>
 */
public final class CuwirePlugin implements SparkPlugin {
    /** The cluster secret, hex. */
    public static final String SECRET = "spark.cuwire.secret";
    /** The device ordinal of executors' endpoints. */
    public static final String DEVICE = "spark.cuwire.device";
    /** The address endpoints listen on. */
    public static final String HOST = "spark.cuwire.host";
    /** How fetches pick their transport: {@code auto}, {@code tcp} or {@code ipc}. */
    public static final String TRANSPORT = TransportMode.SETTING;

    private static final String SECRET_KEY = "secret";
    private static final String DRIVER_KEY = "driver";

    /** Made by Spark. */
    public CuwirePlugin() {}

    @Override
    public DriverPlugin driverPlugin() {
        return new Driver();
    }

    @Override
    public ExecutorPlugin executorPlugin() {
        return new Executor();
    }

    /**
     * The device ordinal for an executor's {@value #DEVICE} setting or {@code gpu} address ({@code ""}: 0), taken
     * modulo the platform's {@code devices}: a discovery script may offer one address per executor slot, more than
     * the host has GPUs ({@code 0, 1} on a one-GPU host: both executors on device 0), and the emulated platform has
     * fewer devices than a GPU host's addresses name.
     *
     * @throws NumberFormatException if {@code value} is not an integer
     * @throws IllegalArgumentException if it is negative
     */
    static int ordinal(String value, int devices) {
        int o = value.isBlank() ? 0 : Integer.parseInt(value.strip());
        if (o < 0) {
            throw new IllegalArgumentException("device ordinal " + value + " (expected: >= 0)");
        }
        return o % devices;
    }

    /** A registration: an executor's endpoint, its addresses as {@code Addresses.encode} writes them. */
    record Registration(String executorId, String address) implements java.io.Serializable {}

    private static final class Driver implements DriverPlugin {
        private Node node;

        @Override
        public Map<String, String> init(SparkContext sc, PluginContext ctx) {
            SparkConf conf = sc.getConf();
            String secret = conf.get(SECRET, "");
            if (secret.isEmpty()) {
                byte[] b = new byte[32];
                new SecureRandom().nextBytes(b);
                secret = HexFormat.of().formatHex(b);
            }
            String host = conf.get(HOST, conf.get("spark.driver.host", "127.0.0.1"));
            node = Node.start(
                    Node.DRIVER,
                    Devices.get(conf.getInt(DEVICE, 0)),
                    HexFormat.of().parseHex(secret),
                    host,
                    TransportMode.parse(TRANSPORT, conf.get(TRANSPORT, "auto")));
            Node n = node;
            sc.addSparkListener(new SparkListener() {
                @Override
                public void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
                    n.executorRemoved(removed.executorId());
                }
            });
            return Map.of(SECRET_KEY, secret, DRIVER_KEY, node.advertised());
        }

        @Override
        public Object receive(Object message) {
            if (message instanceof Registration r) {
                node.executorAdded(r.executorId(), r.address());
                return node.advertised();
            }
            throw new IllegalArgumentException("cuwire driver plugin: unknown message " + message);
        }

        @Override
        public void shutdown() {
            if (node != null) {
                node.close();
            }
        }
    }

    private static final class Executor implements ExecutorPlugin {
        private Node node;

        @Override
        public void init(PluginContext ctx, Map<String, String> extra) {
            if (Node.currentOrNull() != null) {
                return; // local mode: the driver's endpoint serves this JVM
            }
            SparkConf conf = ctx.conf();
            node = Node.start(
                    ctx.executorID(),
                    device(ctx),
                    HexFormat.of().parseHex(extra.get(SECRET_KEY)),
                    conf.get(HOST, host(ctx)),
                    TransportMode.parse(TRANSPORT, conf.get(TRANSPORT, "auto")));
            try {
                ctx.ask(new Registration(ctx.executorID(), node.advertised()));
            } catch (Exception e) {
                node.close();
                throw new IllegalStateException(
                        "cuwire: executor " + ctx.executorID() + " could not register its "
                                + "endpoint with the driver: " + e,
                        e);
            }
        }

        private static Device device(PluginContext ctx) {
            String ordinal = ctx.conf().get(DEVICE, "");
            if (ordinal.isEmpty()) {
                ResourceInformation gpu = ctx.resources().get("gpu");
                if (gpu != null && gpu.addresses().length > 0) {
                    ordinal = gpu.addresses()[0];
                }
            }
            return Devices.get(ordinal(ordinal, Devices.all().size()));
        }

        /** The executor's host: {@code PluginContext.hostname()} throws on real executors in Spark 4.2.0. */
        private static String host(PluginContext ctx) {
            try {
                String h = ctx.hostname();
                if (h != null) {
                    return h;
                }
            } catch (RuntimeException e) {
                // fall through
            }
            try {
                return SparkEnv.get().blockManager().blockManagerId().host();
            } catch (RuntimeException e) {
                try {
                    return InetAddress.getLocalHost().getHostAddress();
                } catch (UnknownHostException u) {
                    return "127.0.0.1";
                }
            }
        }

        @Override
        public void shutdown() {
            if (node != null) {
                node.close();
            }
        }
    }
}
