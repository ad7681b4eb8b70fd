package com.example.consumer;

import com.example.consumer.unopened.Unopened;
import io.cuwire.cluster.Client;
import io.cuwire.cluster.Distributed;
import io.cuwire.cluster.LocalCluster;
import io.cuwire.cluster.ModelHandle;
import io.cuwire.cluster.ObjectRef;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.onnx.OnnxExport;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Message;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportUnavailableException;
import io.cuwire.transport.Transports;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the README shows, from a project of its own: a model class of its own sent to another JVM over TCP, a fit and
 * a broadcast on a local cluster, and {@code ucx://} refused with the artifact to add (this project does not add
 * JUCX). Exits 0 when every check matched, 1 otherwise, saying which.
 */
public final class Main {
    /** The modules README's module-path line gives native access, as examples/consumer/run starts this JVM. */
    private static final String NATIVE_ACCESS = "io.cuwire.memory,io.cuwire.cuda,io.cuwire.transport";

    private Main() {}

    public static void main(String[] args) throws Exception {
        List<String> failed = new ArrayList<>();
        check("ucx:// without JUCX names the artifact to add", Main::ucxWithoutJucx, failed);
        check("a model of this project's own sent to another JVM over tcp", Main::sendToAnotherJvm, failed);
        check("fit, broadcast and predict on a local cluster", Main::fitAndBroadcast, failed);
        check("a fitted model written as ONNX (io.cuwire.onnx over protobuf-java)", Main::onnxExport, failed);
        check(
                Main.class.getModule().isNamed()
                        ? "on the module path a model of a package not opened to io.cuwire.serialize is refused, naming the"
                                + " line to add"
                        : "on the class path a model in any package can be sent (no module boundary)",
                Main::unopened,
                failed);
        check(
                Main.class.getModule().isNamed()
                        ? "on the module path an internal package of cuwire cannot be reached"
                        : "on the class path an internal package of cuwire can be reached (no module boundary)",
                Main::internalPackage,
                failed);
        if (!failed.isEmpty()) {
            System.out.println("consumer: FAILED " + failed);
            System.exit(1);
        }
        System.out.println("consumer: every check matched");
    }

    /** One check: it throws (or returns a complaint) when it does not match. */
    interface Check {
        String run() throws Exception;
    }

    private static void check(String what, Check check, List<String> failed) {
        String complaint;
        try {
            complaint = check.run();
        } catch (Exception | AssertionError e) {
            e.printStackTrace(System.out);
            complaint = e.toString();
        }
        System.out.println(
                (complaint == null ? "MATCH     " : "MISMATCH  ") + what + (complaint == null ? "" : ": " + complaint));
        if (complaint != null) {
            failed.add(what);
        }
    }

    private static String ucxWithoutJucx() {
        TransportConfig config = TransportConfig.builder()
                .secret(new byte[32])
                .receiveInto(d -> {
                    throw new AssertionError("nothing is received");
                })
                .build();
        try (Listener listener = Transports.forAddress("ucx://127.0.0.1:0").listen("ucx://127.0.0.1:0", config)) {
            return "listening at " + listener.address() + " without JUCX on the class path";
        } catch (TransportUnavailableException e) {
            String expected = "add the dependency org.openucx:jucx:";
            System.out.println("          " + e.getMessage());
            return e.getMessage().contains(expected) ? null : "the message lacks '" + expected + "'";
        }
    }

    private static String sendToAnotherJvm() throws Exception {
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        float[] weights = new float[64 * 1024];
        for (int i = 0; i < weights.length; i++) {
            weights[i] = i % 5 - 2;
        }
        Process receiver = new ProcessBuilder(java(Receiver.class))
                .redirectErrorStream(true)
                .start();
        try (BufferedReader out =
                        new BufferedReader(new InputStreamReader(receiver.getInputStream(), StandardCharsets.UTF_8));
                BufferAllocator<DeviceBuffer> device =
                        Devices.get(0).newAllocator("sender-device", BufferAllocator.UNLIMITED);
                BufferAllocator<HostBuffer> host = BufferAllocator.host("sender-host", BufferAllocator.UNLIMITED);
                NdArray centers = NdArray.fromArray(device, new float[] {0, 0, 1, 1, 5, 5}, 3, 2)) {
            try (OutputStream in = receiver.getOutputStream()) {
                in.write((HexFormat.of().formatHex(secret) + "\n").getBytes(StandardCharsets.US_ASCII));
            }
            String address = expectLine(out, "listening ");
            Centroids model = new Centroids("three", weights, Centroids.Distance.MANHATTAN, centers);
            TypeRegistry registry = Centroids.registry();
            TransportConfig config = TransportConfig.builder()
                    .secret(secret)
                    .receiveInto(DeviceMap.of(host, device))
                    .build();
            try (Connection c = Transports.tcp().connect(address, config);
                    Serialized s = registry.serialize(model, c.families().toArray(Family[]::new))) {
                c.send(Message.of(s)).join();
            }
            String received = expectLine(out, "received ");
            if (!receiver.waitFor(60, TimeUnit.SECONDS)) {
                return "the receiver did not exit within 60 s";
            }
            System.out.println("          sent:     " + model.digest());
            System.out.println("          received: " + received);
            if (receiver.exitValue() != 0) {
                return "the receiver exited with " + receiver.exitValue();
            }
            return received.equals(model.digest()) ? null : "the receiver decoded another model";
        } finally {
            receiver.destroyForcibly();
        }
    }

    /**
     * The command that runs {@code main} in another JVM on the path this one runs on: the class path (native access
     * for it, as this jar's manifest gives when run with {@code java -jar}) or the module path (native access for
     * cuwire's modules that call native code).
     */
    private static List<String> java(Class<?> main) {
        List<String> cmd =
                new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow()));
        if (main.getModule().isNamed()) {
            cmd.addAll(List.of(
                    "--enable-native-access=" + NATIVE_ACCESS,
                    "-p",
                    System.getProperty("jdk.module.path"),
                    "-m",
                    main.getModule().getName() + "/" + main.getName()));
        } else {
            cmd.addAll(List.of(
                    "--enable-native-access=ALL-UNNAMED",
                    "-cp",
                    System.getProperty("java.class.path"),
                    main.getName()));
        }
        return cmd;
    }

    /** Serializes an {@link Unopened}, whose package this module does not open (module-info.java). */
    private static String unopened() {
        TypeRegistry registry =
                new TypeRegistry().registerGeneric(Unopened.class, Family.HOST).register(Unopened.class);
        boolean modular = Main.class.getModule().isNamed();
        try (Serialized s = registry.serialize(new Unopened(7), Family.HOST)) {
            return modular ? "serialized " + s + ", a class of a package not opened to io.cuwire.serialize" : null;
        } catch (SerializationException e) {
            System.out.println("          " + e.getMessage());
            String expected = "add 'opens com.example.consumer.unopened to io.cuwire.serialize;' to the module-info of "
                    + "com.example.consumer";
            if (!modular) {
                return "refused on the class path: " + e.getMessage();
            }
            return e.getMessage().contains(expected) ? null : "the message lacks \"" + expected + "\"";
        }
    }

    /**
     * A public class of a cuwire {@code internal} package, made by reflection: on the module path the JDK refuses it
     * (the package is not exported), on the class path nothing stops it.
     */
    private static String internalPackage() throws Exception {
        Class<?> internal = Class.forName("io.cuwire.memory.internal.EmulatedDeviceProvider");
        boolean modular = Main.class.getModule().isNamed();
        try {
            internal.getConstructor().newInstance();
            return modular
                    ? "made an instance of " + internal.getName() + " from module "
                            + Main.class.getModule().getName()
                    : null;
        } catch (IllegalAccessException e) {
            System.out.println("          " + e.getMessage());
            String expected = "module io.cuwire.memory does not export io.cuwire.memory.internal to module "
                    + "com.example.consumer";
            if (!modular) {
                return "refused on the class path: " + e.getMessage();
            }
            return e.getMessage().contains(expected) ? null : "the JDK's message lacks '" + expected + "'";
        }
    }

    /**
     * A LinearRegression fitted here and written by {@link OnnxExport}: on the module path protobuf-java (the automatic
     * module com.google.protobuf) encodes the classes of io.cuwire.onnx's unexported package. The bytes are checked
     * as far as this project can without protobuf of its own: a ModelProto starts with ir_version (field 1, varint).
     */
    private static String onnxExport() {
        float[] xv = new float[100 * 2];
        float[] yv = new float[100];
        for (int i = 0; i < 100; i++) {
            xv[2 * i] = i % 7;
            xv[2 * i + 1] = i % 3;
            yv[i] = 2 * xv[2 * i] - xv[2 * i + 1] + 3;
        }
        byte[] model;
        try (BufferAllocator<HostBuffer> host = BufferAllocator.host("onnx", BufferAllocator.UNLIMITED);
                NdArray x = NdArray.fromArray(host, xv, 100, 2);
                NdArray y = NdArray.fromArray(host, yv, 100);
                LinearRegression fitted = new LinearRegression().fit(x, y)) {
            model = OnnxExport.toBytes(fitted);
        }
        System.out.println("          " + model.length + " bytes, IR version " + OnnxExport.IR_VERSION);
        if (model.length < 2 || model[0] != 0x08 || model[1] != OnnxExport.IR_VERSION) {
            return "the model does not start with ir_version " + OnnxExport.IR_VERSION + " (field 1)";
        }
        return new String(model, StandardCharsets.ISO_8859_1).contains("cuwire") ? null : "no producer name cuwire";
    }

    /** Reads the receiver's output up to a line starting with {@code prefix}; returns the rest of that line. */
    private static String expectLine(BufferedReader out, String prefix) throws Exception {
        StringBuilder seen = new StringBuilder();
        for (String line = out.readLine(); line != null; line = out.readLine()) {
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length());
            }
            seen.append(line).append('\n');
        }
        throw new AssertionError("the receiver ended without a '" + prefix + "' line:\n" + seen);
    }

    /** README "Use it from Java", as it is there. */
    private static String fitAndBroadcast() throws Exception {
        double intercept;
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
                xs.add(NdArray.fromArray(client.memory(), xv, 1000, 2));
                ys.add(NdArray.fromArray(client.memory(), yv, 1000));
            }
            List<ObjectRef> x = client.scatter(xs);
            List<ObjectRef> y = client.scatter(ys);
            try (LinearRegression model = Distributed.fit(client, new LinearRegression(), x, y)) {
                intercept = model.intercept();
                ModelHandle handle = client.broadcast(model);
                List<ObjectRef> predicted = Distributed.predict(client, handle, x);
                List<NdArray> predictions = client.gather(predicted, NdArray.class);
                first = predictions.getFirst().toFloatArray();
                predictions.forEach(NdArray::close);
                client.free(predicted);
            }
            client.free(x);
            client.free(y);
            xs.forEach(NdArray::close);
            ys.forEach(NdArray::close);
        }
        System.out.println("          intercept " + intercept + " (expected 3)");
        if (Math.abs(intercept - 3) > 1e-3) {
            return "intercept " + intercept;
        }
        for (int i = 0; i < first.length; i++) {
            double expected = 2 * (i % 17) - i % 13 + 3;
            if (Math.abs(first[i] - expected) > 1e-3) {
                return "prediction " + i + ": " + first[i] + " (expected " + expected + ")";
            }
        }
        return first.length == 1000 ? null : first.length + " predictions (expected 1000)";
    }
}
