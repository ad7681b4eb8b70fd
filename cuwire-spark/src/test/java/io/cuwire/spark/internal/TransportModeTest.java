package io.cuwire.spark.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The choice of a fetch's transport, without Spark. */
class TransportModeTest {
    private static final String HOST = "worker-1/boot-a";
    private static final Addresses SAME_HOST = new Addresses("tcp://10.0.0.1:4000", "ipc://10.0.0.1:4001", HOST);

    @Test
    void shouldTakeIpcForAPeerOfThisHostUnderAuto() {
        TransportMode.Choice c = TransportMode.AUTO.choose(SAME_HOST, HOST, "");
        assertEquals(new TransportMode.Choice("ipc://10.0.0.1:4001", "ipc", ""), c);
    }

    @Test
    void shouldTakeTcpForAPeerOfAnotherHostOrBootUnderAuto() {
        TransportMode.Choice c = TransportMode.AUTO.choose(SAME_HOST, "worker-1/boot-b", "");
        assertEquals("tcp://10.0.0.1:4000", c.address());
        assertEquals("tcp", c.transport());
        assertTrue(c.whyNotIpc().contains("runs on host 'worker-1/boot-a'"), c.whyNotIpc());
    }

    @Test
    void shouldTakeTcpWithoutIpcOnEitherSideUnderAuto() {
        TransportMode.Choice noPeerIpc = TransportMode.AUTO.choose(Addresses.tcpOnly("tcp://10.0.0.1:4000"), HOST, "");
        assertEquals("tcp", noPeerIpc.transport());
        assertTrue(noPeerIpc.whyNotIpc().contains("no CUDA IPC address"), noPeerIpc.whyNotIpc());
        TransportMode.Choice noLocalIpc = TransportMode.AUTO.choose(SAME_HOST, HOST, "no handles here");
        assertEquals("tcp", noLocalIpc.transport());
        assertEquals("no handles here", noLocalIpc.whyNotIpc());
    }

    @Test
    void shouldTakeTcpWhenAskedEvenWhereIpcWorks() {
        assertEquals(
                new TransportMode.Choice("tcp://10.0.0.1:4000", "tcp", ""),
                TransportMode.TCP.choose(SAME_HOST, HOST, ""));
    }

    @Test
    void shouldFailClearlyWhenIpcIsAskedAndImpossible() {
        assertEquals("ipc", TransportMode.IPC.choose(SAME_HOST, HOST, "").transport());
        IllegalStateException e = assertThrows(
                IllegalStateException.class, () -> TransportMode.IPC.choose(SAME_HOST, "worker-2/boot-c", ""));
        assertTrue(
                e.getMessage()
                        .startsWith("spark.cuwire.transport=ipc, but CUDA IPC cannot carry this fetch: "
                                + "the peer at ipc://10.0.0.1:4001 runs on host"),
                e.getMessage());
    }

    @Test
    void shouldParseTheSettingAndRefuseOthersNamingIt() {
        assertEquals(TransportMode.AUTO, TransportMode.parse(TransportMode.SETTING, null));
        assertEquals(TransportMode.IPC, TransportMode.parse(TransportMode.SETTING, " IPC "));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> TransportMode.parse(TransportMode.SETTING, "ucx"));
        assertEquals("spark.cuwire.transport=ucx (expected: auto, tcp or ipc)", e.getMessage());
    }

    @Test
    void shouldEncodeAddressesSoThatATcpAddressAloneStillParses() {
        assertEquals(SAME_HOST, Addresses.parse(SAME_HOST.encode()));
        assertEquals(Addresses.tcpOnly("tcp://h:1"), Addresses.parse("tcp://h:1"));
        assertThrows(IllegalArgumentException.class, () -> Addresses.parse("tcp://h:1 ipc://h:2"));
    }
}
