package io.cuwire.cuda;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Issue 3: the CUDA platform's public API exposes owner objects ({@link io.cuwire.memory.DeviceBuffer},
 * {@link io.cuwire.memory.DeviceStream}, {@link CuBlas}, {@link CudaEvent}), never driver handles: no public signature
 * of the public packages carries a {@link MemorySegment} (how the bindings hold {@code CUstream}, {@code CUevent},
 * {@code cublasHandle_t}, ...) or a bound function.
 */
class PublicApiTest {
    private static final Set<Class<?>> NATIVE = Set.of(MemorySegment.class, MethodHandle.class);
    private static final List<String> PUBLIC_PACKAGES = List.of("io/cuwire/cuda");

    /** The public classes of the public packages, from this module's classes directory or jar. */
    private static List<Class<?>> publicClasses() throws Exception {
        Path location = codeSource();
        List<Class<?>> classes = new ArrayList<>();
        if (Files.isDirectory(location)) {
            collect(location, classes);
        } else {
            try (FileSystem jar = FileSystems.newFileSystem(location)) {
                collect(jar.getPath("/"), classes);
            }
        }
        return classes;
    }

    private static Path codeSource() throws URISyntaxException {
        return Path.of(
                Cuda.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    private static void collect(Path root, List<Class<?>> into) throws Exception {
        for (String pkg : PUBLIC_PACKAGES) {
            Path dir = root.resolve(pkg);
            List<Path> files;
            try (Stream<Path> list = Files.list(dir)) {
                files = list.filter(p -> p.getFileName().toString().endsWith(".class"))
                        .toList();
            }
            for (Path file : files) {
                String name = pkg.replace('/', '.') + "."
                        + file.getFileName().toString().replace(".class", "");
                Class<?> c = Class.forName(name, false, Cuda.class.getClassLoader());
                if (Modifier.isPublic(c.getModifiers())) {
                    into.add(c);
                }
            }
        }
    }

    private static void assertNotNative(Class<?> type, Object where) {
        assertFalse(NATIVE.contains(type), "a native handle in the public API: " + where);
    }

    @Test
    void shouldCarryNoDriverHandleInAnyPublicSignatureOfThePublicPackages() throws Exception {
        List<Class<?>> classes = publicClasses();
        assertTrue(
                classes.containsAll(
                        List.of(Cuda.class, CuBlas.class, CudaEvent.class, Kernels.class, CudaException.class)),
                "scanned " + classes);
        for (Class<?> c : classes) {
            for (Method m : c.getMethods()) {
                assertNotNative(m.getReturnType(), m);
                for (Class<?> p : m.getParameterTypes()) {
                    assertNotNative(p, m);
                }
            }
            for (Constructor<?> k : c.getConstructors()) {
                for (Class<?> p : k.getParameterTypes()) {
                    assertNotNative(p, k);
                }
            }
            for (Field f : c.getFields()) {
                assertNotNative(f.getType(), f);
            }
        }
    }
}
