// Prepares the ONNX protobuf definitions for cuwire-onnx's protoc step (single-file source launch, JDK 25), run by
// Maven in initialize: java build/onnx/OnnxProto.java in=FILE out=DIR
//   in=FILE   onnx-ml.proto of an ONNX release, as a registry package installs it (Debian's python3-onnx:
//             /usr/lib/python3/dist-packages/onnx/onnx-ml.proto, ONNX 1.12.0); -Donnx.proto=FILE in Maven
//   out=DIR   writes DIR/onnx/onnx-ml.proto: the same definitions with two file options changed, nothing else:
//             java_package io.cuwire.onnx.internal.proto (so that the generated classes cannot clash with another
//             jar's copy in package "onnx") and the default optimize_for (the full runtime of protobuf-java rather
//             than the lite one that Debian's C++ build asks for).
// The repository commits no ONNX source: the file is read where the package put it. It must declare package onnx
// and an IR_VERSION of 8 or more (ONNX 1.12 or newer; the exporter writes IR version 8). Errors name the file.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class OnnxProto {
    static final String JAVA_PACKAGE = "io.cuwire.onnx.internal.proto";
    private static final Pattern IR_VERSION = Pattern.compile("^\\s*IR_VERSION\\s*=\\s*(0x[0-9A-Fa-f]+|\\d+)\\s*;");

    private OnnxProto() {}

    public static void main(String[] args) throws IOException {
        Map<String, String> opts = new HashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                fail("argument '" + a + "' (expected: key=value)");
            }
            opts.put(a.substring(0, eq), a.substring(eq + 1));
        }
        if (!opts.containsKey("in") || !opts.containsKey("out") || opts.size() != 2) {
            fail("arguments " + opts.keySet() + " (expected: in=FILE out=DIR)");
        }
        Path in = Path.of(opts.get("in"));
        List<String> lines;
        try {
            lines = Files.readAllLines(in, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            fail(in + " does not exist: cuwire-onnx compiles the ONNX protobuf definitions of a registry package. "
                    + "Install Debian's python3-onnx (apt-get install python3-onnx; .ci/run does), or point "
                    + "-Donnx.proto= at the onnx-ml.proto of another ONNX release (1.12 or newer)");
            return;
        }
        boolean packageSeen = false;
        long irVersion = -1;
        List<String> out = new ArrayList<>();
        for (String line : lines) {
            String t = line.strip();
            Matcher m = IR_VERSION.matcher(line);
            if (m.find()) {
                irVersion = Long.decode(m.group(1));
            }
            if (t.startsWith("option java_package") || t.startsWith("option optimize_for")) {
                out.add("// (option removed by build/onnx/OnnxProto.java) " + t);
                continue;
            }
            out.add(line);
            if (t.equals("package onnx;")) {
                packageSeen = true;
                out.add("option java_package = \"" + JAVA_PACKAGE + "\";");
            }
        }
        if (!packageSeen) {
            fail(in + " declares no 'package onnx;': not ONNX's onnx-ml.proto");
        }
        if (irVersion < 8) {
            fail(in + " has IR_VERSION " + irVersion + " (expected: 8 or more, ONNX 1.12 or newer)");
        }
        Path dir = Path.of(opts.get("out"), "onnx");
        Files.createDirectories(dir);
        Files.write(dir.resolve("onnx-ml.proto"), out, StandardCharsets.UTF_8);
        System.out.println("onnx-ml.proto of IR version " + irVersion + " from " + in + " -> " + dir);
    }

    private static void fail(String message) {
        System.err.println("error: build/onnx/OnnxProto.java: " + message);
        System.exit(1);
    }
}
