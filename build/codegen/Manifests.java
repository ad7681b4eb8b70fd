// cuwire's code generator for the operation and kernel manifests, run by Maven in generate-sources (single-file
// source launch, JDK 25): java build/codegen/Manifests.java key=value ...
//   ops=FILE        the operations manifest (cuwire-ml/src/main/manifest/operations.manifest)
//   ops-java=DIR    writes its Java enums (package io.cuwire.ml) under DIR
//   ops-cuda=FILE   writes its CUDA constants (one enum per Java enum) into FILE
//   kernels=FILE    the kernels manifest (cuwire-ml-cuda/src/main/manifest/kernels.manifest)
//   kernels-java=DIR  writes the Java kernel table (Kernel constants with their signatures, selectors) under DIR
//   kernels-cuda=FILE writes the extern "C" entry points into FILE
// The manifests' formats are described in their own header comments. Errors name the file and line.

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class Manifests {
    private static final String GENERATED = "Generated at build time by build/codegen/Manifests.java from ";

    record Constant(String name, int code, String doc) {}

    record OpEnum(String javaName, String cudaType, String cudaPrefix, String doc, List<Constant> constants) {}

    record Entry(String label, String ctype, String key) {}

    record Axis(String name, List<Entry> entries) {}

    record Param(String ctype, String name) {}

    record Family(
            String pattern,
            String call,
            List<Axis> axes,
            String bounds,
            Set<String> boundsOnly,
            List<Param> params,
            String where) {}

    record Instance(
            String name,
            String javaName,
            Family family,
            Map<String, Entry> choice,
            List<Param> params,
            boolean bounded) {}

    public static void main(String[] args) throws IOException {
        Map<String, String> opts = new HashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("argument '" + a + "' (expected: key=value)");
            }
            opts.put(a.substring(0, eq), a.substring(eq + 1));
        }
        if (opts.containsKey("ops")) {
            Path ops = Path.of(opts.get("ops"));
            List<OpEnum> enums = readOps(ops);
            if (opts.containsKey("ops-java")) {
                for (OpEnum e : enums) {
                    write(Path.of(opts.get("ops-java"), "io/cuwire/ml", e.javaName() + ".java"), opsJava(e, ops));
                }
            }
            if (opts.containsKey("ops-cuda")) {
                write(Path.of(opts.get("ops-cuda")), opsCuda(enums, ops));
            }
        }
        if (opts.containsKey("kernels")) {
            Path file = Path.of(opts.get("kernels"));
            KernelManifest m = readKernels(file);
            if (opts.containsKey("kernels-java")) {
                write(
                        Path.of(opts.get("kernels-java"), m.javaPackage().replace('.', '/'), m.javaClass() + ".java"),
                        kernelsJava(m, file));
            }
            if (opts.containsKey("kernels-cuda")) {
                write(Path.of(opts.get("kernels-cuda")), kernelsCuda(m, file));
            }
        }
    }

    private static void write(Path path, String text) throws IOException {
        Files.createDirectories(path.getParent());
        if (!Files.exists(path) || !Files.readString(path).equals(text)) {
            Files.writeString(path, text);
        }
    }

    private static IllegalArgumentException error(Path file, int line, String what) {
        return new IllegalArgumentException(file + ":" + line + ": " + what);
    }

    // ---------------------------------------------------------------- operations

    static List<OpEnum> readOps(Path file) throws IOException {
        List<OpEnum> enums = new ArrayList<>();
        List<String> lines = Files.readAllLines(file);
        OpEnum current = null;
        for (int i = 0; i < lines.size(); i++) {
            String raw = lines.get(i);
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] w = line.split("\\s+", 5);
            if (!raw.startsWith(" ") && w[0].equals("enum")) {
                if (w.length < 5) {
                    throw error(file, i + 1, "enum JavaName CudaType CUDA_PREFIX_ javadoc (expected 5 fields)");
                }
                current = new OpEnum(w[1], w[2], w[3], w[4], new ArrayList<>());
                enums.add(current);
            } else if (raw.startsWith(" ") && current != null) {
                String[] c = line.split("\\s+", 3);
                if (c.length < 3 || !c[0].matches("[A-Z][A-Z0-9_]*") || !c[1].matches("\\d+")) {
                    throw error(file, i + 1, "constant: NAME code javadoc (expected an upper-case name, a code)");
                }
                int code = Integer.parseInt(c[1]);
                for (Constant k : current.constants()) {
                    if (k.code() == code || k.name().equals(c[0])) {
                        throw error(file, i + 1, c[0] + " " + code + " repeats " + k.name() + " " + k.code());
                    }
                }
                current.constants().add(new Constant(c[0], code, c[2]));
            } else {
                throw error(file, i + 1, "'" + line + "' (expected: enum ... or an indented constant)");
            }
        }
        return enums;
    }

    static String opsJava(OpEnum e, Path file) {
        StringBuilder b = new StringBuilder();
        b.append("package io.cuwire.ml;\n\n");
        b.append("/**\n * ")
                .append(e.doc())
                .append("\n *\n * <p>")
                .append(GENERATED)
                .append("{@code ")
                .append(file.getFileName())
                .append("}: add an operation there (its code is what the compute kernels "
                        + "dispatch on), not here.\n */\n");
        b.append("public enum ").append(e.javaName()).append(" {\n");
        List<Constant> cs = e.constants();
        for (int i = 0; i < cs.size(); i++) {
            Constant c = cs.get(i);
            b.append("    /** ")
                    .append(c.doc())
                    .append(" */\n    ")
                    .append(c.name())
                    .append('(')
                    .append(c.code())
                    .append(')')
                    .append(i + 1 < cs.size() ? ",\n" : ";\n");
        }
        b.append("\n    private final int code;\n\n    ")
                .append(e.javaName())
                .append("(int code) {\n")
                .append("        this.code = code;\n    }\n\n");
        b.append("    /** The operation's code in the compute kernels, as the manifest gives it. */\n")
                .append("    public int code() {\n        return code;\n    }\n}\n");
        return b.toString();
    }

    static String opsCuda(List<OpEnum> enums, Path file) {
        StringBuilder b = new StringBuilder("// ")
                .append(GENERATED)
                .append(file.getFileName())
                .append(": the operation codes, as io.cuwire.ml's enums carry them.\n#pragma once\n\n");
        for (OpEnum e : enums) {
            b.append("enum ").append(e.cudaType()).append(" {");
            List<Constant> cs = e.constants();
            for (int i = 0; i < cs.size(); i++) {
                b.append(i == 0 ? " " : ", ")
                        .append(e.cudaPrefix())
                        .append(cs.get(i).name())
                        .append(" = ")
                        .append(cs.get(i).code());
            }
            b.append(" };  // io.cuwire.ml.").append(e.javaName()).append('\n');
        }
        return b.toString();
    }

    // ---------------------------------------------------------------- kernels

    record KernelManifest(
            String javaPackage,
            String javaClass,
            String resource,
            String builtBy,
            String targets,
            List<Instance> instances,
            List<Family> families) {}

    private static final Pattern KERNEL = Pattern.compile(
            "kernel\\s+(\\S+)\\s+(\\S+)((?:\\s+[A-Z]:[A-Z0-9_]+)*)(?:\\s+bounds=(\\S+?)(?:@(\\S+))?)?\\s*\\((.*)\\)");
    private static final Pattern HOLE = Pattern.compile("\\{([A-Z])\\}");

    static KernelManifest readKernels(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file);
        Map<String, List<Entry>> lists = new LinkedHashMap<>();
        List<Family> families = new ArrayList<>();
        String pkg = null;
        String cls = null;
        String resource = null;
        String builtBy = null;
        String targets = null;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            int at = i + 1;
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            while (line.startsWith("kernel") && !line.endsWith(")") && i + 1 < lines.size()) {
                line = line + " " + lines.get(++i).strip();
            }
            String[] w = line.split("\\s+");
            switch (w[0]) {
                case "module" -> {
                    String[] m = line.split("\\s+", 5);
                    if (m.length < 5) {
                        throw error(file, at, "module package.Class resource built-by targets");
                    }
                    pkg = m[1].substring(0, m[1].lastIndexOf('.'));
                    cls = m[1].substring(m[1].lastIndexOf('.') + 1);
                    resource = m[2];
                    builtBy = m[3];
                    targets = m[4];
                }
                case "types" -> {
                    List<Entry> entries = new ArrayList<>();
                    for (int j = 2; j < w.length; j++) {
                        String[] e = w[j].split("=", -1);
                        if (e.length != 3) {
                            throw error(file, at, "'" + w[j] + "' (expected: label=ctype=key)");
                        }
                        entries.add(new Entry(e[0], e[1], e[2]));
                    }
                    lists.put(w[1], entries);
                }
                case "kernel" -> {
                    Matcher m = KERNEL.matcher(line);
                    if (!m.matches()) {
                        throw error(
                                file,
                                at,
                                "'" + line + "' (expected: kernel name call [X:LIST ...]"
                                        + " [bounds=threads,blocks[@label,...]] (ctype name, ...))");
                    }
                    List<Axis> axes = new ArrayList<>();
                    for (String ax : m.group(3).strip().isEmpty()
                            ? new String[0]
                            : m.group(3).strip().split("\\s+")) {
                        String[] p = ax.split(":");
                        List<Entry> entries = lists.get(p[1]);
                        if (entries == null) {
                            throw error(file, at, "no types " + p[1] + " declared above");
                        }
                        axes.add(new Axis(p[0], entries));
                    }
                    List<Param> params = new ArrayList<>();
                    for (String p : m.group(6).split(",")) {
                        String s = p.strip();
                        int sp = Math.max(s.lastIndexOf(' '), s.lastIndexOf('*'));
                        if (sp < 0) {
                            throw error(file, at, "parameter '" + s + "' (expected: ctype name)");
                        }
                        params.add(new Param(
                                s.substring(0, sp + 1).strip(),
                                s.substring(sp + 1).strip()));
                    }
                    Set<String> only =
                            m.group(5) == null ? Set.of() : Set.of(m.group(5).split(","));
                    families.add(new Family(m.group(1), m.group(2), axes, m.group(4), only, params, file + ":" + at));
                }
                default -> throw error(file, at, "'" + w[0] + "' (expected: module, types or kernel)");
            }
        }
        if (cls == null) {
            throw error(file, 1, "no module line");
        }
        List<Instance> instances = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (Family f : families) {
            for (Map<String, Entry> choice : choices(f.axes())) {
                String name = fill(f.pattern(), choice, true);
                if (!names.add(name)) {
                    throw new IllegalArgumentException(f.where() + ": kernel " + name + " declared twice");
                }
                List<Param> ps = new ArrayList<>();
                for (Param p : f.params()) {
                    ps.add(new Param(fill(p.ctype(), choice, false), p.name()));
                }
                String label = String.join(
                        "_", choice.values().stream().map(Entry::label).toList());
                boolean bounded = f.bounds() != null
                        && (f.boundsOnly().isEmpty() || f.boundsOnly().contains(label));
                instances.add(new Instance(name, javaConstant(name), f, choice, ps, bounded));
            }
        }
        return new KernelManifest(pkg, cls, resource, builtBy, targets, instances, families);
    }

    private static List<Map<String, Entry>> choices(List<Axis> axes) {
        List<Map<String, Entry>> out = new ArrayList<>();
        out.add(new LinkedHashMap<>());
        for (Axis a : axes) {
            List<Map<String, Entry>> next = new ArrayList<>();
            for (Map<String, Entry> c : out) {
                for (Entry e : a.entries()) {
                    Map<String, Entry> m = new LinkedHashMap<>(c);
                    m.put(a.name(), e);
                    next.add(m);
                }
            }
            out = next;
        }
        return out;
    }

    private static String fill(String text, Map<String, Entry> choice, boolean label) {
        Matcher m = HOLE.matcher(text);
        StringBuilder b = new StringBuilder();
        while (m.find()) {
            Entry e = choice.get(m.group(1));
            if (e == null) {
                throw new IllegalArgumentException("'" + text + "': no axis " + m.group(1));
            }
            m.appendReplacement(b, Matcher.quoteReplacement(label ? e.label() : e.ctype()));
        }
        return m.appendTail(b).toString();
    }

    private static String javaConstant(String name) {
        return (name.startsWith("ml_") ? name.substring(3) : name).toUpperCase(Locale.ROOT);
    }

    private static String kind(Param p, String where) {
        if (p.ctype().contains("*")) {
            return "PTR";
        }
        return switch (p.ctype()) {
            case "int32_t" -> "I32";
            case "int64_t" -> "I64";
            case "float" -> "F32";
            case "double" -> "F64";
            default ->
                throw new IllegalArgumentException(where + ": parameter " + p.name() + " of C type " + p.ctype()
                        + " (expected: int32_t, int64_t, float, double or a pointer)");
        };
    }

    private static String selector(Family f) {
        String base = f.pattern().replaceAll("_?\\{[A-Z]\\}", "");
        base = base.startsWith("ml_") ? base.substring(3) : base;
        StringBuilder b = new StringBuilder();
        boolean up = false;
        for (char c : base.toCharArray()) {
            if (c == '_') {
                up = true;
            } else {
                b.append(up ? Character.toUpperCase(c) : c);
                up = false;
            }
        }
        return b.toString();
    }

    private static boolean isDType(Axis a) {
        return a.entries().stream().noneMatch(e -> e.key().matches("-?\\d+"));
    }

    static String kernelsJava(KernelManifest m, Path file) {
        StringBuilder b = new StringBuilder();
        boolean dtype = m.families().stream().anyMatch(f -> f.axes().stream().anyMatch(Manifests::isDType));
        b.append("package ").append(m.javaPackage()).append(";\n\n");
        for (String k : List.of("F32", "F64", "I32", "I64", "PTR")) {
            b.append("import static io.cuwire.cuda.KernelParam.").append(k).append(";\n");
        }
        b.append("\nimport io.cuwire.cuda.Kernel;\nimport io.cuwire.cuda.KernelModule;\n");
        if (dtype) {
            b.append("import io.cuwire.memory.DType;\n");
        }
        b.append("import java.util.List;\n\n");
        b.append("/**\n * The kernels of {@code ")
                .append(m.resource())
                .append("} with their signatures, and for each " + "family the selector of\n * its instantiations. ")
                .append(GENERATED)
                .append("{@code ")
                .append(file.getFileName())
                .append("},\n * with the CUDA entry points: edit the manifest, not this " + "file.\n */\n");
        b.append("final class ").append(m.javaClass()).append(" {\n");
        b.append("    /** The module of these kernels. */\n    static final KernelModule MODULE = KernelModule.of(")
                .append(m.javaClass())
                .append(".class.getClassLoader(),\n            \"")
                .append(m.resource())
                .append("\", \"")
                .append(m.targets())
                .append("\", \"")
                .append(m.builtBy())
                .append("\");\n\n");
        for (Instance in : m.instances()) {
            StringBuilder sig = new StringBuilder();
            for (Param p : in.params()) {
                sig.append(", ").append(kind(p, in.family().where()));
            }
            b.append("    static final Kernel ")
                    .append(in.javaName())
                    .append(" = MODULE.kernel(\"")
                    .append(in.name())
                    .append('"')
                    .append(sig)
                    .append(");\n");
        }
        b.append(
                "\n    /** Every kernel of the manifest, in its order. */\n    static final List<Kernel> ALL = List.of(");
        for (int i = 0; i < m.instances().size(); i++) {
            b.append(i == 0 ? "\n            " : ",\n            ")
                    .append(m.instances().get(i).javaName());
        }
        b.append(");\n\n    private ").append(m.javaClass()).append("() {\n    }\n");
        for (Family f : m.families()) {
            if (f.axes().isEmpty()) {
                continue;
            }
            List<String> params = new ArrayList<>();
            for (Axis a : f.axes()) {
                params.add((isDType(a) ? "DType " : "int ") + a.name().toLowerCase(Locale.ROOT));
            }
            b.append("\n    /** The instantiation of {@code ")
                    .append(f.pattern())
                    .append("} for ")
                    .append(String.join(", ", f.axes().stream().map(Axis::name).toList()))
                    .append(". */\n");
            b.append("    static Kernel ")
                    .append(selector(f))
                    .append('(')
                    .append(String.join(", ", params))
                    .append(") {\n");
            for (Instance in : m.instances()) {
                if (in.family() != f) {
                    continue;
                }
                List<String> conds = new ArrayList<>();
                for (Axis a : f.axes()) {
                    Entry e = in.choice().get(a.name());
                    String v = a.name().toLowerCase(Locale.ROOT);
                    conds.add(isDType(a) ? v + " == DType." + e.key() : v + " == " + e.key());
                }
                b.append("        if (")
                        .append(String.join(" && ", conds))
                        .append(") {\n            return ")
                        .append(in.javaName())
                        .append(";\n        }\n");
            }
            List<String> shown = new ArrayList<>();
            for (Axis a : f.axes()) {
                shown.add("\" " + a.name() + " = \" + " + a.name().toLowerCase(Locale.ROOT));
            }
            b.append("        throw new IllegalArgumentException(\"no kernel ")
                    .append(f.pattern())
                    .append(" for\" + ")
                    .append(String.join(" + \",\" + ", shown))
                    .append(");\n    }\n");
        }
        b.append("}\n");
        return b.toString();
    }

    static String kernelsCuda(KernelManifest m, Path file) {
        StringBuilder b = new StringBuilder("// ")
                .append(GENERATED)
                .append(file.getFileName())
                .append(": the extern \"C\" entry\n// points of ")
                .append(m.resource())
                .append(", each calling its family's template (ml/*.cuh).\n#pragma once\n\nextern \"C\" {\n");
        for (Instance in : m.instances()) {
            b.append('\n');
            if (in.bounded()) {
                b.append("__launch_bounds__(").append(in.family().bounds()).append(")\n");
            }
            List<String> decl = new ArrayList<>();
            List<String> names = new ArrayList<>();
            for (Param p : in.params()) {
                decl.add(p.ctype() + " " + p.name());
                names.add(p.name());
            }
            b.append("__global__ void ")
                    .append(in.name())
                    .append('(')
                    .append(String.join(", ", decl))
                    .append(") {\n    ")
                    .append(fill(in.family().call(), in.choice(), false))
                    .append('(')
                    .append(String.join(", ", names))
                    .append(");\n}\n");
        }
        b.append("\n}  // extern \"C\"\n");
        return b.toString();
    }
}
