package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.test.arch.Architecture;
import io.cuwire.transport.spi.TransportProvider;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * {@link Transports} finds every transport through its provider and names no implementation (the shared
 * architecture rule {@link Architecture#nameNoClassOf}, over it and its nested classes).
 */
class TransportsTest {
    @Test
    void shouldNameNoImplementation() {
        Architecture.nameNoClassOf(Transports.class, "io.cuwire.transport.internal..")
                .check(Architecture.mainClasses());
    }

    @Test
    void shouldFindTheFourTransportsOfThisModuleThroughTheirProviders() {
        Map<String, String> providers = new TreeMap<>();
        for (TransportProvider p : Transports.providers()) {
            providers.put(p.scheme(), p.getClass().getName());
        }
        assertEquals("io.cuwire.transport.internal.tcp.TcpProvider", providers.get(Transports.TCP));
        assertEquals("io.cuwire.transport.internal.ipc.IpcProvider", providers.get(Transports.IPC));
        assertEquals("io.cuwire.transport.internal.ucx.UcxProvider", providers.get(Transports.UCX));
        assertEquals("io.cuwire.transport.internal.inproc.InProcessProvider", providers.get(Transports.IN_PROCESS));
        for (String scheme : List.of(Transports.TCP, Transports.IPC, Transports.IN_PROCESS)) {
            Transport t = Transports.forScheme(scheme);
            assertEquals(scheme, t.name());
            assertSame(t, Transports.forAddress(scheme + "://somewhere:1"), "one transport per scheme");
        }
        assertSame(Transports.tcp(), Transports.forScheme(Transports.TCP));
        assertSame(Transports.inProcess(), Transports.forScheme(Transports.IN_PROCESS));
        assertSame(Transports.ipc(), Transports.forScheme(Transports.IPC));
    }

    @Test
    void shouldNameTheSchemeAndTheProvidersFoundForAnUnknownScheme() {
        TransportException e = assertThrows(TransportException.class, () -> Transports.forAddress("nope://x:1"));
        assertEquals(TransportException.class, e.getClass());
        assertTrue(
                e.getMessage().startsWith("no transport for scheme 'nope' (transport providers found: "),
                e.getMessage());
        assertProvidersNamed(e.getMessage());
    }

    @Test
    void shouldNameTheProvidersFoundForAnAddressWithoutScheme() {
        TransportException e = assertThrows(TransportException.class, () -> Transports.forAddress("127.0.0.1:1"));
        assertTrue(
                e.getMessage()
                        .startsWith("no transport for address '127.0.0.1:1' (expected: scheme://…; "
                                + "transport providers found: "),
                e.getMessage());
        assertProvidersNamed(e.getMessage());
    }

    @Test
    void shouldNameTheSchemeTheProvidersAndTheReasonForAnUnavailableTransport() {
        TransportUnavailableException e = assertThrows(
                TransportUnavailableException.class, () -> Transports.forAddress(AbsentProvider.SCHEME + "://x:1"));
        assertTrue(
                e.getMessage()
                        .startsWith(AbsentProvider.REASON + " (transport scheme 'absent'; transport "
                                + "providers found: "),
                e.getMessage());
        assertProvidersNamed(e.getMessage());
    }

    private static void assertProvidersNamed(String message) {
        for (String scheme : List.of("tcp", "ipc", "ucx", "inproc", LoopProvider.SCHEME, AbsentProvider.SCHEME)) {
            assertTrue(message.matches(".*providers found: (.*, )?" + scheme + "(, .*)?\\)"), message);
        }
    }
}
