package io.cuwire.transport.internal.ucx;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Which UCX this process loaded, for {@code cuwire info}: its version ({@code ucp_get_version_string}), the
 * {@code libucp} file the dynamic linker chose (from {@code /proc/self/maps}), the directory UCX loads its modules
 * from ({@code UCX_MODULE_DIR}, else {@code ucx/} beside {@code libucs}, as UCX itself does) with the modules there,
 * and whether its context reports CUDA memory.
 *
 * @param version UCX's version string, or {@code unknown}
 * @param library the path of the loaded {@code libucp}, or {@code unknown}
 * @param moduleDir where UCX looks for its modules, or {@code unknown}
 * @param modules the module names found there ({@code cma}, {@code cuda}, {@code ib}, ..., {@code libuct_} left off;
 *     {@code ucm:cuda} for memory hooks)
 * @param carriesCuda whether the context reports the CUDA memory type
 */
record UcxBuild(String version, String library, String moduleDir, List<String> modules, boolean carriesCuda) {
    static final String UNKNOWN = "unknown";

    UcxBuild {
        modules = List.copyOf(modules);
    }

    /** One line: {@code UCX 1.16.0 (/x/libucp.so.0.0.0), modules in /x/ucx: cma, cuda; CUDA memory: yes}. */
    String describe() {
        return "UCX " + version + " (" + library + "), modules in " + moduleDir + ": "
                + (modules.isEmpty() ? "none" : String.join(", ", modules)) + "; CUDA memory: "
                + (carriesCuda
                        ? "yes (device frames go direct to a peer whose UCX carries CUDA too)"
                        : "no (device frames are staged through pinned host memory)");
    }

    /** Reads this process's UCX; call after JUCX loaded it. */
    static UcxBuild probe(boolean carriesCuda) {
        Optional<Path> ucp = mapped("libucp.so");
        Optional<Path> ucs = mapped("libucs.so");
        String env = System.getenv("UCX_MODULE_DIR");
        Optional<Path> dir =
                env != null && !env.isBlank() ? Optional.of(Path.of(env)) : ucs.map(p -> p.resolveSibling("ucx"));
        return new UcxBuild(
                loadedVersion(),
                ucp.map(Path::toString).orElse(UNKNOWN),
                dir.map(Path::toString).orElse(UNKNOWN),
                dir.map(UcxBuild::moduleNames).orElse(List.of()),
                carriesCuda);
    }

    /** The module names of the files in {@code dir}: {@code libuct_cuda.so} is {@code cuda}. */
    static List<String> moduleNames(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".so"))
                    .map(n -> n.startsWith("libuct_")
                            ? n.substring(7, n.length() - 3)
                            : n.startsWith("libucm_")
                                    ? "ucm:" + n.substring(7, n.length() - 3)
                                    : n.startsWith("libucs_")
                                            ? "ucs:" + n.substring(7, n.length() - 3)
                                            : n.substring(0, n.length() - 3))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    /** The first file mapped into this process whose name starts with {@code prefix}. */
    private static Optional<Path> mapped(String prefix) {
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.map(l -> l.indexOf('/') < 0 ? "" : l.substring(l.indexOf('/')))
                    .filter(p ->
                            !p.isEmpty() && Path.of(p).getFileName().toString().startsWith(prefix))
                    .findFirst()
                    .map(Path::of);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    @SuppressWarnings("restricted") // one call of ucp_get_version_string in the libucp that JUCX loaded
    private static String loadedVersion() {
        try {
            Linker linker = Linker.nativeLinker();
            SymbolLookup ucp = SymbolLookup.libraryLookup("libucp.so.0", Arena.global());
            MethodHandle get = linker.downcallHandle(
                    ucp.find("ucp_get_version_string").orElseThrow(), FunctionDescriptor.of(ValueLayout.ADDRESS));
            MemorySegment s = (MemorySegment) get.invokeExact();
            return s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return UNKNOWN;
        }
    }
}
