package io.cuwire.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.CodeElement;
import java.lang.classfile.CodeModel;
import java.lang.classfile.Instruction;
import java.lang.classfile.MethodModel;
import java.lang.classfile.Opcode;
import java.lang.classfile.instruction.ConstantInstruction;
import java.lang.classfile.instruction.FieldInstruction;
import java.lang.classfile.instruction.InvokeDynamicInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.MonitorInstruction;
import java.lang.constant.ConstantDesc;
import java.lang.constant.DirectMethodHandleDesc;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The context gate, checked in the compiled classes (a CPU-side test: it proves the structure, not the driver's
 * behaviour, which the GPU tests drive). {@link Driver} binds the functions that need no context in {@code Api} and
 * every other one in {@code InContext}; a context-bound function may be called only from a lambda that does nothing
 * but the downcall, handed straight to {@code Driver.inContext}, which makes the context current with nothing that
 * could block between that and the downcall. cuBLAS routines ({@link CuBlasLibrary}) follow the same rule.
 */
class DriverContextGateTest {
    private static final String PACKAGE = "io/cuwire/cuda/";
    private static final String DRIVER = PACKAGE + "Driver";
    private static final String API = DRIVER + "$Api";
    private static final String IN_CONTEXT = DRIVER + "$InContext";
    private static final String DOWNCALL = DRIVER + "$Downcall";
    private static final String CUBLAS = PACKAGE + "CuBlasLibrary";
    private static final String METHOD_HANDLE = "java/lang/invoke/MethodHandle";
    private static final String LAMBDA_METAFACTORY = "Ljava/lang/invoke/LambdaMetafactory;";

    /**
     * The driver functions that need no current context, from the CUDA driver API reference: initialization, version,
     * error names, device management (they take a {@code CUdevice}), primary context management and the calls that set
     * and read the current context. Everything else works in the current context.
     */
    private static final Set<String> CONTEXT_FREE = Set.of(
            "cuInit",
            "cuDriverGetVersion",
            "cuGetErrorName",
            "cuGetErrorString",
            "cuDeviceGetCount",
            "cuDeviceGet",
            "cuDeviceGetName",
            "cuDeviceTotalMem_v2",
            "cuDeviceGetAttribute",
            "cuDeviceGetPCIBusId",
            "cuDeviceCanAccessPeer",
            "cuDevicePrimaryCtxRetain",
            "cuCtxSetCurrent",
            "cuCtxGetCurrent");

    private static ClassModel load(String internalName) {
        try (InputStream in = Driver.class.getClassLoader().getResourceAsStream(internalName + ".class")) {
            if (in == null) {
                throw new AssertionError(internalName + ".class is not on the class path");
            }
            return ClassFile.of().parse(in.readAllBytes());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The string constants a class's static initializer loads that name driver functions ({@code cu...}). */
    private static Set<String> boundSymbols(ClassModel c) {
        Set<String> names = new TreeSet<>();
        for (MethodModel m : c.methods()) {
            if (!m.methodName().equalsString("<clinit>")) {
                continue;
            }
            for (CodeElement e : code(m)) {
                if (e instanceof ConstantInstruction k && k.constantValue() instanceof String s && s.startsWith("cu")) {
                    names.add(s);
                }
            }
        }
        return names;
    }

    private static CodeModel code(MethodModel m) {
        return m.code().orElseThrow(() -> new AssertionError(m.methodName() + " has no code"));
    }

    private static String name(ClassModel c, MethodModel m) {
        return c.thisClass().asInternalName() + "." + m.methodName().stringValue();
    }

    private static boolean isInvoke(CodeElement e, String owner, String method) {
        return e instanceof InvokeInstruction i
                && i.owner().asInternalName().equals(owner)
                && i.name().equalsString(method);
    }

    /** Whether {@code e} reads a downcall handle that must run in a context. */
    private static boolean readsBoundHandle(CodeElement e) {
        if (!(e instanceof FieldInstruction f)
                || !f.typeSymbol().descriptorString().equals("L" + METHOD_HANDLE + ";")) {
            return false;
        }
        String owner = f.owner().asInternalName();
        return f.opcode() == Opcode.GETSTATIC && owner.equals(IN_CONTEXT)
                || f.opcode() == Opcode.GETFIELD && owner.equals(CUBLAS);
    }

    /** The lambda implementation method an {@code invokedynamic} creates, or {@code null} for other call sites. */
    private static String lambdaTarget(InvokeDynamicInstruction indy) {
        if (!indy.bootstrapMethod().owner().descriptorString().equals(LAMBDA_METAFACTORY)) {
            return null;
        }
        for (ConstantDesc arg : indy.bootstrapArgs()) {
            if (arg instanceof DirectMethodHandleDesc target) {
                return target.methodName();
            }
        }
        return null;
    }

    @Test
    void shouldBindOnlyFunctionsThatNeedNoContextOutsideTheGate() {
        Set<String> free = boundSymbols(load(API));
        Set<String> bound = boundSymbols(load(IN_CONTEXT));

        assertTrue(free.containsAll(Set.of("cuInit", "cuCtxSetCurrent", "cuDevicePrimaryCtxRetain")), free::toString);
        Set<String> misplaced = new TreeSet<>(free);
        misplaced.removeAll(CONTEXT_FREE);
        assertEquals(Set.of(), misplaced, "functions that work in the current context, bound outside InContext");
        assertTrue(
                bound.containsAll(Set.of(
                        "cuMemcpyDtoHAsync_v2",
                        "cuMemAlloc_v2",
                        "cuLaunchKernel",
                        "cuStreamSynchronize",
                        "cuEventSynchronize",
                        "cuIpcOpenMemHandle_v2")),
                bound::toString);
        Set<String> needless = new TreeSet<>(bound);
        needless.retainAll(CONTEXT_FREE);
        assertEquals(Set.of(), needless, "context-free functions bound in InContext");
    }

    @Test
    void shouldCallEveryContextBoundFunctionFromALambdaThatDoesNothingElseHandedStraightToTheGate() {
        Map<String, Set<String>> called = new HashMap<>();
        for (String owner : List.of(DRIVER, IN_CONTEXT, API, CUBLAS)) {
            ClassModel c = load(owner);
            Map<String, MethodModel> lambdas = new HashMap<>();
            for (MethodModel m : c.methods()) {
                List<FieldInstruction> reads = new ArrayList<>();
                for (CodeElement e : m.code().map(CodeModel::elementList).orElse(List.of())) {
                    if (readsBoundHandle(e)) {
                        reads.add((FieldInstruction) e);
                    }
                }
                if (reads.isEmpty()) {
                    continue;
                }
                assertTrue(
                        m.methodName().stringValue().startsWith("lambda$"),
                        name(c, m)
                                + " reads a context-bound downcall handle outside a lambda handed to Driver.inContext");
                assertOnlyTheDowncall(c, m);
                lambdas.put(m.methodName().stringValue(), m);
                for (FieldInstruction f : reads) {
                    called.computeIfAbsent(f.owner().asInternalName(), k -> new TreeSet<>())
                            .add(f.name().stringValue());
                }
            }
            Set<String> handedToGate = new LinkedHashSet<>();
            for (MethodModel m : c.methods()) {
                List<CodeElement> code = m.code().map(CodeModel::elementList).orElse(List.of());
                for (int i = 0; i < code.size(); i++) {
                    if (!(code.get(i) instanceof InvokeDynamicInstruction indy)) {
                        continue;
                    }
                    String target = lambdaTarget(indy);
                    if (target == null || !lambdas.containsKey(target)) {
                        continue;
                    }
                    CodeElement next = nextInvoke(code, i + 1);
                    assertTrue(
                            next != null && isInvoke(next, DRIVER, "inContext"),
                            name(c, m) + " hands " + target + ", a context-bound downcall, to " + next
                                    + " instead of Driver.inContext");
                    handedToGate.add(target);
                }
            }
            Set<String> unreached = new TreeSet<>(lambdas.keySet());
            unreached.removeAll(handedToGate);
            assertEquals(Set.of(), unreached, owner + ": context-bound downcalls not created for Driver.inContext");
        }
        for (String owner : List.of(IN_CONTEXT, CUBLAS)) {
            assertEquals(
                    handleFields(load(owner)),
                    called.getOrDefault(owner, Set.of()),
                    owner + ": every bound function is called, and only through the gate (the scan saw them all)");
        }
    }

    /** The downcall handles a class declares. */
    private static Set<String> handleFields(ClassModel c) {
        Set<String> names = new TreeSet<>();
        c.fields().stream()
                .filter(f -> f.fieldType().equalsString("L" + METHOD_HANDLE + ";"))
                .forEach(f -> names.add(f.fieldName().stringValue()));
        assertTrue(names.size() >= 8, c.thisClass().asInternalName() + " declares handles " + names);
        return names;
    }

    /** The first invocation at or after {@code from}; {@code null} if none. */
    private static CodeElement nextInvoke(List<CodeElement> code, int from) {
        for (int i = from; i < code.size(); i++) {
            if (code.get(i) instanceof InvokeInstruction) {
                return code.get(i);
            }
        }
        return null;
    }

    /** A gated lambda reads its handle and calls it: no other call, field, monitor or call site that could block. */
    private static void assertOnlyTheDowncall(ClassModel c, MethodModel m) {
        int invokes = 0;
        int fields = 0;
        for (CodeElement e : code(m)) {
            if (e instanceof InvokeInstruction i) {
                invokes++;
                assertTrue(
                        i.owner().asInternalName().equals(METHOD_HANDLE)
                                && i.name().equalsString("invokeExact"),
                        name(c, m) + " calls " + i.owner().asInternalName() + "." + i.name() + " besides its downcall");
            } else if (e instanceof FieldInstruction f) {
                fields++;
                assertTrue(
                        readsBoundHandle(f),
                        name(c, m) + " reads " + f.owner().asInternalName() + "." + f.name()
                                + " besides its downcall handle (evaluate arguments before the gate)");
            } else if (e instanceof InvokeDynamicInstruction
                    || e instanceof MonitorInstruction
                    || e instanceof Instruction other && other.opcode() == Opcode.NEW) {
                fail(name(c, m) + " does more than its downcall: " + e);
            }
        }
        assertEquals(1, invokes, name(c, m) + ": downcalls");
        assertEquals(1, fields, name(c, m) + ": handle reads");
    }

    @Test
    void shouldMakeTheContextCurrentImmediatelyBeforeTheDowncall() {
        ClassModel driver = load(DRIVER);
        MethodModel gate = driver.methods().stream()
                .filter(m -> m.methodName().equalsString("inContext"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("Driver has no inContext"));
        List<CodeElement> code = code(gate).elementList();
        int context = -1;
        int set = -1;
        int downcall = -1;
        for (int i = 0; i < code.size(); i++) {
            CodeElement e = code.get(i);
            if (isInvoke(e, PACKAGE + "CudaDevice", "context")) {
                context = i;
            } else if (e instanceof FieldInstruction f
                    && f.owner().asInternalName().equals(API)
                    && f.name().equalsString("CTX_SET_CURRENT")) {
                assertEquals(-1, set, "the gate sets the context twice");
                set = i;
            } else if (isInvoke(e, DOWNCALL, "invoke")) {
                assertEquals(-1, downcall, "the gate makes its call twice");
                downcall = i;
            }
        }
        assertTrue(
                context >= 0 && set > context && downcall > set,
                "the gate looks the context up (" + context + "), sets it (" + set + "), then calls (" + downcall
                        + ")");
        List<String> between = new ArrayList<>();
        for (CodeElement e : code.subList(set + 1, downcall)) {
            if (e instanceof InvokeInstruction
                    || e instanceof InvokeDynamicInstruction
                    || e instanceof MonitorInstruction
                    || e instanceof FieldInstruction) {
                between.add(e.toString());
            }
        }
        assertEquals(1, between.size(), "between setting the context and the downcall: " + between);
        assertTrue(between.getFirst().contains("invokeExact"), "only cuCtxSetCurrent's own downcall: " + between);
    }

    @Test
    void shouldBindNativeFunctionsOnlyInTheDriverAndCuBlasAndSetContextsOnlyInTheGate() throws Exception {
        List<ClassModel> classes = moduleClasses();
        assertTrue(classes.size() > 20, "classes of cuwire-cuda found: " + classes.size());
        Set<String> binders = new TreeSet<>();
        Set<String> setters = new TreeSet<>();
        for (ClassModel c : classes) {
            for (MethodModel m : c.methods()) {
                for (CodeElement e : m.code().map(CodeModel::elementList).orElse(List.of())) {
                    if (isInvoke(e, "java/lang/foreign/Linker", "downcallHandle")) {
                        binders.add(c.thisClass().asInternalName());
                    }
                    if (e instanceof FieldInstruction f
                            && f.opcode() == Opcode.GETSTATIC
                            && f.owner().asInternalName().equals(API)
                            && f.name().equalsString("CTX_SET_CURRENT")) {
                        setters.add(name(c, m));
                    }
                    assertFalse(
                            isInvoke(e, DRIVER, "ctxSetCurrent"),
                            name(c, m)
                                    + " sets a context itself: driver work takes its device and goes through the gate");
                }
            }
        }
        assertEquals(Set.of(API, CUBLAS), binders, "classes that bind native functions");
        // the gate; the tests' own setter; and the hand-off to a native library that works in the current context
        // (UCX's CUDA transports on their progress thread), which cuwire's driver calls never rely on
        assertEquals(
                Set.of(
                        DRIVER + ".inContext",
                        DRIVER + ".lambda$ctxSetCurrent$0",
                        DRIVER + ".lambda$makeCurrentForNativeLibraries$0"),
                normalizeLambdas(setters),
                "code that sets the current context");
    }

    /** Lambda names carry a counter that depends on the order javac meets them; keep only the enclosing method. */
    private static Set<String> normalizeLambdas(Set<String> names) {
        Set<String> out = new TreeSet<>();
        for (String n : names) {
            out.add(n.matches(".*\\.lambda\\$\\w+\\$\\d+") ? n.replaceAll("\\$\\d+$", "\\$0") : n);
        }
        return out;
    }

    /** Every class of cuwire-cuda's main code, from the directory or jar that holds {@link Driver}. */
    private static List<ClassModel> moduleClasses() throws IOException, URISyntaxException {
        URI location =
                Driver.class.getProtectionDomain().getCodeSource().getLocation().toURI();
        Path root = Path.of(location);
        if (Files.isDirectory(root)) {
            return parseAll(root.resolve("io/cuwire/cuda"));
        }
        try (FileSystem jar = FileSystems.newFileSystem(root)) {
            return parseAll(jar.getPath("io/cuwire/cuda"));
        }
    }

    private static List<ClassModel> parseAll(Path dir) throws IOException {
        List<ClassModel> out = new ArrayList<>();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                out.add(ClassFile.of().parse(Files.readAllBytes(p)));
            }
        }
        return out;
    }
}
