package io.cuwire.transport.internal.ucx;

import io.cuwire.transport.TransportUnavailableException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.Properties;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * This process's UCX: JUCX's native part loaded once over the system UCX ({@code libucp.so.0}, package
 * {@code libucx0}) and one UCP context with the tag and wake-up features ({@value #WAKEUP_PROPERTY}), shared by every
 * UCX connection (each has a worker of its own). Made on first use; a process where it cannot load gets the same
 * {@link TransportUnavailableException} from every call.
 *
 * <p>Before the native part loads, {@code UCX_ERROR_SIGNALS} is cleared in the process environment (through libc's
 * {@code setenv}, since UCX reads its global options from the environment when its library loads and a JVM cannot
 * change its own environment otherwise): UCX must not take SIGSEGV, SIGBUS, SIGILL or SIGFPE, which the JVM uses
 * itself. The network devices ({@code NET_DEVICES}) are passed to the context as configuration: the system property
 * {@value #NET_DEVICES_PROPERTY}, default {@value #DEFAULT_NET_DEVICES} — loopback, for processes of one host
 * (transfers between two processes of one VM over its {@code eth0} lane were seen to hang); set it to the RDMA or
 * Ethernet devices of a cluster, or {@code all}. The transports ({@code TLS}) come from the system property
 * {@value #TRANSPORTS_PROPERTY}, else from {@code UCX_TLS}, else are {@value #DEFAULT_TRANSPORTS} (see
 * {@link #DEFAULT_TRANSPORTS}).
 *
 * <p>Endpoints ask UCX for peer failure handling only when the system property {@value #PEER_ERRORS_PROPERTY} is
 * {@code true}: with it UCX reports a dead peer itself, but UCX 1.13 then keeps to transports that can detect one —
 * between two processes of one host that is TCP over loopback instead of shared memory and CMA (measured: roughly
 * half the throughput). Without it a dead peer is noticed by the connection's bootstrap socket, and the worker is
 * destroyed with its requests.
 */
final class Ucx {
    /** System property naming UCX's network devices ({@code UCX_NET_DEVICES}). */
    static final String NET_DEVICES_PROPERTY = "cuwire.ucx.netDevices";

    static final String DEFAULT_NET_DEVICES = "lo";
    /** System property naming the UCX transports to use ({@code UCX_TLS}). */
    static final String TRANSPORTS_PROPERTY = "cuwire.ucx.transports";
    /**
     * UCX's transports when neither {@value #TRANSPORTS_PROPERTY} nor {@code UCX_TLS} says: all but System V shared
     * memory ({@code sysv}), whose {@code shmat} of a peer's FIFO was seen to fail with "Invalid argument" between
     * two JVMs of one host (UCX 1.13, a CI run); POSIX shared memory ({@code posix}) serves instead.
     */
    static final String DEFAULT_TRANSPORTS = "^sysv";
    /** System property: {@code true} to have UCX handle peer failures on each endpoint. */
    static final String PEER_ERRORS_PROPERTY = "cuwire.ucx.peerErrorHandling";
    /**
     * System property: {@code false} to make the context without UCX's wake-up feature, so that the agents park
     * instead of waiting on their workers' events (see {@link UcxAgent}); default {@code true}.
     */
    static final String WAKEUP_PROPERTY = "cuwire.ucx.wakeup";

    private static Ucx instance;
    private static TransportUnavailableException unavailable;

    private final UcpContext context;
    private final boolean carriesCuda;
    private final String netDevices;
    private final boolean peerErrorHandling;
    private final boolean wakeup;
    private UcxBuild build;

    private Ucx(UcpContext context, String netDevices, boolean wakeup) {
        this.context = context;
        this.netDevices = netDevices;
        this.wakeup = wakeup;
        this.peerErrorHandling = Boolean.getBoolean(PEER_ERRORS_PROPERTY);
        this.carriesCuda = UcsConstants.MEMORY_TYPE.isMemTypeSupported(
                context.getMemoryTypesMask(), UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_CUDA);
    }

    /**
     * The process's UCX, loading it on first use.
     *
     * @throws TransportUnavailableException if JUCX or the system UCX cannot be loaded
     */
    static synchronized Ucx get() {
        if (instance != null) {
            return instance;
        }
        if (unavailable != null) {
            throw new TransportUnavailableException(unavailable.getMessage(), unavailable);
        }
        String devices = System.getProperty(NET_DEVICES_PROPERTY, DEFAULT_NET_DEVICES);
        String transports = transports(System.getProperty(TRANSPORTS_PROPERTY), System.getenv("UCX_TLS"));
        boolean wakeup = wakeup(System.getProperty(WAKEUP_PROPERTY));
        try {
            clearErrorSignals();
            UcpParams params = new UcpParams().requestTagFeature().setConfig("NET_DEVICES", devices);
            if (wakeup) {
                params.requestWakeupFeature();
            }
            if (transports != null) {
                params.setConfig("TLS", transports);
            }
            instance = new Ucx(new UcpContext(params), devices, wakeup);
            return instance;
        } catch (LinkageError e) {
            unavailable = new TransportUnavailableException(unavailableMessage(e), e);
            throw unavailable;
        } catch (RuntimeException e) {
            unavailable = new TransportUnavailableException(
                    "UCX not available: cannot create a UCP context "
                            + "(NET_DEVICES=" + devices + (transports == null ? "" : ", TLS=" + transports) + "): "
                            + e.getMessage(),
                    e);
            throw unavailable;
        }
    }

    /**
     * The transports to pass to the context as {@code TLS}: the system property when set, else none (UCX reads
     * {@code UCX_TLS} itself) when the environment sets {@code UCX_TLS}, else {@value #DEFAULT_TRANSPORTS}.
     */
    static String transports(String property, String environment) {
        if (property != null && !property.isBlank()) {
            return property.strip();
        }
        return environment != null ? null : DEFAULT_TRANSPORTS;
    }

    /** Whether UCX can be used in this process (loading it if not yet done). */
    static boolean available() {
        try {
            get();
            return true;
        } catch (TransportUnavailableException e) {
            return false;
        }
    }

    UcpContext context() {
        return context;
    }

    /** Whether this UCX build moves CUDA memory itself (the context reports the CUDA memory type). */
    boolean carriesCuda() {
        return carriesCuda;
    }

    /** Which UCX this is (version, library, modules, CUDA), read once. */
    synchronized UcxBuild build() {
        if (build == null) {
            build = UcxBuild.probe(carriesCuda);
        }
        return build;
    }

    String netDevices() {
        return netDevices;
    }

    /**
     * Whether the context gets UCX's wake-up feature, from {@value #WAKEUP_PROPERTY}'s value ({@code null} or blank:
     * yes).
     *
     * @throws IllegalArgumentException if the value is neither {@code true} nor {@code false}
     */
    static boolean wakeup(String property) {
        if (property == null || property.isBlank()) {
            return true;
        }
        return switch (property.strip().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default ->
                throw new IllegalArgumentException(WAKEUP_PROPERTY + "=" + property + " (expected: true or false)");
        };
    }

    /** Whether the context has UCX's wake-up feature: its workers' agents wait on their events, not by parking. */
    boolean wakeup() {
        return wakeup;
    }

    /** Whether endpoints ask UCX to handle peer failures (see the class comment). */
    boolean peerErrorHandling() {
        return peerErrorHandling;
    }

    /**
     * What to tell a user whose UCX did not load, from the {@link LinkageError} that JUCX's loading threw: names the
     * missing piece (the system library or the JUCX jar) and what to install.
     */
    static String unavailableMessage(Throwable error) {
        StringBuilder details = new StringBuilder();
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t.getMessage() != null) {
                details.append(details.isEmpty() ? "" : "; ").append(t.getMessage());
            }
        }
        String detail = details.toString();
        String lower = detail.toLowerCase(Locale.ROOT);
        if (lower.contains("org/openucx") || lower.contains("org.openucx")) {
            if (Ucx.class.getModule().isNamed()) {
                return "UCX not available: the JUCX classes are not in this JVM's modules; add the dependency "
                        + jucxArtifact() + " (cuwire-transport declares it optional) to the module path and run with "
                        + "--add-modules jucx (" + detail + ")";
            }
            return "UCX not available: the JUCX classes are not on the class path; add the dependency " + jucxArtifact()
                    + " (cuwire-transport declares it optional) (" + detail + ")";
        }
        String library = "libucp.so.0";
        for (String lib : new String[] {"libucp.so", "libuct.so", "libucs.so", "libucm.so"}) {
            int at = detail.indexOf(lib);
            if (at >= 0) {
                int end = at + lib.length();
                while (end < detail.length() && (Character.isDigit(detail.charAt(end)) || detail.charAt(end) == '.')) {
                    end++;
                }
                library = detail.substring(at, end).replaceAll("\\.$", "");
                break;
            }
        }
        if (lower.contains("cannot open shared object file") || lower.contains("no such file")) {
            return "UCX not available: " + library + " not found; install libucx0 (UCX 1.13 or later) (" + detail + ")";
        }
        return "UCX not available: " + library + " could not be loaded; install libucx0 (UCX 1.13 or later) (" + detail
                + ")";
    }

    /**
     * The JUCX artifact this module was built against ({@code org.openucx:jucx:<version>}), from the build's
     * {@code jucx.properties}; without it (a build that left the resource out) {@code org.openucx:jucx} alone.
     */
    static String jucxArtifact() {
        try (InputStream in = Ucx.class.getResourceAsStream("jucx.properties")) {
            if (in == null) {
                return "org.openucx:jucx";
            }
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty("artifact", "org.openucx:jucx");
        } catch (IOException e) {
            return "org.openucx:jucx";
        }
    }

    /** Clears {@code UCX_ERROR_SIGNALS} in the native environment, before UCX's library reads it. */
    @SuppressWarnings("restricted") // one call of libc's setenv
    private static void clearErrorSignals() {
        Linker linker = Linker.nativeLinker();
        MethodHandle setenv = linker.downcallHandle(
                linker.defaultLookup()
                        .find("setenv")
                        .orElseThrow(() -> new TransportUnavailableException("UCX not available: libc has no setenv")),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) setenv.invokeExact(arena.allocateFrom("UCX_ERROR_SIGNALS"), arena.allocateFrom(""), 1);
            if (rc != 0) {
                throw new TransportUnavailableException("UCX not available: setenv(UCX_ERROR_SIGNALS) failed");
            }
        } catch (TransportUnavailableException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("setenv downcall failed", t);
        }
    }
}
