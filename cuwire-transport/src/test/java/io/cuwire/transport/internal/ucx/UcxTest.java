package io.cuwire.transport.internal.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.MemoryKind;
import io.cuwire.transport.IdleStrategy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class UcxTest {
    @Test
    void shouldNameTheMissingSystemLibraryAndThePackage() {
        UnsatisfiedLinkError e = new UnsatisfiedLinkError("Native code library failed to load: libjucx_amd64.so. "
                + "/tmp/jucx/libjucx_amd64.so: libucp.so.0: cannot open shared object file: No such file or "
                + "directory");
        String m = Ucx.unavailableMessage(new ExceptionInInitializerError(e));
        assertTrue(m.startsWith("UCX not available: libucp.so.0 not found; install libucx0"), m);
        assertTrue(m.contains("cannot open shared object file"), m);
    }

    @Test
    void shouldNameTheJucxJarWhenItsClassesAreMissing() {
        String m = Ucx.unavailableMessage(new NoClassDefFoundError("org/openucx/jucx/ucp/UcpParams"));
        assertTrue(
                m.startsWith("UCX not available: the JUCX classes are not on the class path; add the dependency "
                        + "org.openucx:jucx:"),
                m);
    }

    @Test
    void shouldSayALibraryThatIsThereCouldNotBeLoaded() {
        String m = Ucx.unavailableMessage(new UnsatisfiedLinkError("/x/libuct.so.0: file too short"));
        assertTrue(m.startsWith("UCX not available: libuct.so.0 could not be loaded; install libucx0"), m);
    }

    @Test
    void shouldLeaveOutSysvUnlessThePropertyOrTheEnvironmentNamesTheTransports() {
        assertEquals("^sysv", Ucx.transports(null, null));
        assertEquals("^sysv", Ucx.transports(" ", null));
        assertEquals(null, Ucx.transports(null, "tcp"));
        assertEquals("posix,cma", Ucx.transports(" posix,cma ", "tcp"));
    }

    @Test
    void shouldPutSmallHostFramesIntoTheFirstPartOnBothSidesAlike() {
        List<Boolean> inline = UcxConnection.coalesced(
                List.of(MemoryKind.HOST, MemoryKind.DEVICE, MemoryKind.PINNED, MemoryKind.HOST, MemoryKind.HOST),
                List.of(100L, 10L, 64L << 10, (64L << 10) + 1, 0L));
        assertEquals(List.of(true, false, true, false, true), inline);
        assertEquals(3, UcxConnection.partsOf(MemoryKind.DEVICE, (8L << 20) + 1, 4 << 20, 64 << 20));
        assertEquals(2, UcxConnection.partsOf(MemoryKind.HOST, (64L << 20) + 1, 4 << 20, 64 << 20));
        assertEquals(257, UcxConnection.partsOf(MemoryKind.PINNED, (64L << 20) + 1, 4 << 20, 256 << 10));
        assertEquals((5L << 28) | 7, UcxConnection.tag(5, 7));
    }

    @Test
    void shouldTakeTheWakeUpFeatureUnlessThePropertySaysFalse() {
        assertTrue(Ucx.wakeup(null));
        assertTrue(Ucx.wakeup(" "));
        assertTrue(Ucx.wakeup("TRUE"));
        assertFalse(Ucx.wakeup(" false "));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ucx.wakeup("no"));
        assertTrue(e.getMessage().contains(Ucx.WAKEUP_PROPERTY + "=no"), e.getMessage());
    }

    @Test
    void shouldWaitOnItsWorkersEventDescriptorWhereThisUcxHasOne() {
        assumeTrue(Ucx.available(), "no UCX in this JVM");
        assumeTrue(Ucx.get().wakeup(), "the wake-up feature is turned off here (" + Ucx.WAKEUP_PROPERTY + ")");
        UcxAgent agent = new UcxAgent(Ucx.get(), "events", IdleStrategy.spinFor(Duration.ZERO));
        try {
            agent.workerAddress(TimeUnit.SECONDS.toNanos(30));
            assertTrue(agent.waitsOnEvents(), "the agent parks instead of waiting on its worker's events");
        } finally {
            agent.close();
        }
    }
}
