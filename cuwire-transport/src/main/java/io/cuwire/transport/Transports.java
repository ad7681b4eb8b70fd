package io.cuwire.transport;

import io.cuwire.transport.spi.Availability;
import io.cuwire.transport.spi.TransportProvider;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/**
 * The transports of this process, by name or by address scheme: every {@link TransportProvider} registered in
 * {@code META-INF/services} on the class path, found with {@link ServiceLoader} on first use. This module registers
 * {@value #TCP}, {@value #IPC}, {@value #UCX} and {@value #IN_PROCESS}.
 *
 * <p>A lookup of a scheme that no provider serves, that two providers claim, or whose provider says it can't run
 * here ({@link TransportProvider#availability()}) throws an exception naming the scheme, the providers found and the
 * reason.
 */
public final class Transports {
    /** The TCP transport's name and scheme. */
    public static final String TCP = "tcp";
    /** The in-process transport's name and scheme. */
    public static final String IN_PROCESS = "inproc";
    /** The CUDA IPC transport's name and scheme. */
    public static final String IPC = "ipc";
    /** The UCX transport's name and scheme. */
    public static final String UCX = "ucx";

    private Transports() {}

    /**
     * TCP over NIO sockets; device frames staged through pinned bounce buffers.
     *
     * @throws TransportException if no provider for {@value #TCP} is on the class path
     */
    public static Transport tcp() {
        return forScheme(TCP);
    }

    /**
     * Between two parts of one JVM; frames are lent to the receiver, never copied.
     *
     * @throws TransportException if no provider for {@value #IN_PROCESS} is on the class path
     */
    public static Transport inProcess() {
        return forScheme(IN_PROCESS);
    }

    /**
     * CUDA IPC between processes of one host on the same device platform: control and host frames over TCP, device
     * frames copied device to device through cached IPC mappings of the sender's allocations.
     *
     * @throws TransportException if no provider for {@value #IPC} is on the class path
     */
    public static Transport ipc() {
        return forScheme(IPC);
    }

    /**
     * UCX through JUCX over the system's UCX ({@code libucx0}); device frames direct when that UCX carries CUDA
     * memory, staged otherwise. JUCX ({@code org.openucx:jucx}) is an optional dependency of this module: add it to
     * use UCX.
     *
     * @throws TransportUnavailableException where UCX does not load in this process (JUCX or the system library
     *     missing), naming what is missing and how to get it (the artifact {@code org.openucx:jucx} to add, for JUCX)
     * @throws TransportException if no provider for {@value #UCX} is on the class path
     */
    public static Transport ucx() {
        return forScheme(UCX);
    }

    /**
     * The transport whose scheme starts {@code address} ({@code tcp://…}, {@code ipc://…}, {@code ucx://…},
     * {@code inproc://…}, or a scheme another provider serves).
     *
     * @throws TransportException if the address has no scheme or no provider serves it
     * @throws TransportUnavailableException if its provider can't run here (the message says why)
     */
    public static Transport forAddress(String address) {
        int colon = address.indexOf("://");
        if (colon <= 0) {
            throw new TransportException("no transport for address '" + address + "' (expected: scheme://…; "
                    + "transport providers found: " + Registry.INSTANCE.describe() + ")");
        }
        return forScheme(address.substring(0, colon));
    }

    /**
     * The transport of {@code scheme} ({@code tcp}).
     *
     * @throws TransportException if no provider serves {@code scheme}, or two do
     * @throws TransportUnavailableException if its provider can't run here (the message says why)
     */
    public static Transport forScheme(String scheme) {
        return Registry.INSTANCE.transport(scheme);
    }

    /** The providers found, by scheme, in the order the class path lists them. */
    public static List<TransportProvider> providers() {
        return Registry.INSTANCE.providers;
    }

    /** The providers of the class path, loaded once. */
    private static final class Registry {
        static final Registry INSTANCE = new Registry();

        final List<TransportProvider> providers;
        /** Schemes, each to the providers claiming it (more than one is an error at lookup). */
        final Map<String, List<TransportProvider>> byScheme = new LinkedHashMap<>();
        /** Providers that failed to load, with why: named in every lookup failure. */
        final List<String> broken = new ArrayList<>();

        private Registry() {
            List<TransportProvider> found = new ArrayList<>();
            Iterator<TransportProvider> it = ServiceLoader.load(
                            TransportProvider.class, Transports.class.getClassLoader())
                    .iterator();
            while (true) {
                try {
                    if (!it.hasNext()) {
                        break;
                    }
                    TransportProvider p = it.next();
                    found.add(p);
                    byScheme.computeIfAbsent(p.scheme(), s -> new ArrayList<>()).add(p);
                } catch (ServiceConfigurationError e) {
                    broken.add(e.getMessage());
                }
            }
            providers = List.copyOf(found);
        }

        Transport transport(String scheme) {
            List<TransportProvider> claimants = byScheme.get(scheme);
            if (claimants == null) {
                throw new TransportException(
                        "no transport for scheme '" + scheme + "' (transport providers found: " + describe() + ")");
            }
            if (claimants.size() > 1) {
                throw new TransportException("transport scheme '" + scheme + "' is claimed by "
                        + claimants.stream().map(p -> p.getClass().getName()).toList()
                        + " (expected: one provider per scheme)");
            }
            TransportProvider provider = claimants.getFirst();
            Availability availability = provider.availability();
            if (!availability.available()) {
                throw new TransportUnavailableException(availability.reason() + " (transport scheme '" + scheme
                        + "'; transport providers found: " + describe() + ")");
            }
            return provider.transport();
        }

        String describe() {
            String found = providers.isEmpty()
                    ? "none"
                    : String.join(
                            ", ",
                            providers.stream().map(TransportProvider::scheme).toList());
            return broken.isEmpty() ? found : found + "; failed to load: " + broken;
        }
    }
}
