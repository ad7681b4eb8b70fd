package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.Devices;
import io.cuwire.test.ChildJvm;
import io.cuwire.transport.internal.ucx.UcxTransport;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The conformance suite over UCX with the peer in a second JVM (skipped, with the reason, only where UCX does not
 * load), plus what is UCX's own: garbage on the bootstrap socket, the capabilities a UCX connection tells, and the
 * error that names the missing library.
 */
class UcxTransportTest extends TransportConformanceSuite {
    @BeforeAll
    static void ucxLoads() {
        assumeTrue(UcxTransport.available(), () -> "UCX does not load here: " + UcxTransport.unavailableReason());
    }

    @Override
    protected Transport transport() {
        return Transports.ucx();
    }

    @Override
    protected String listenAddress() {
        return "ucx://127.0.0.1:0";
    }

    @Override
    protected boolean peerInOwnProcess() {
        return true;
    }

    @Override
    protected boolean stagesDeviceFrames() {
        return !UcxTransport.carriesCuda();
    }

    @Override
    protected boolean peerUcxCarriesCuda() {
        return UcxTransport.carriesCuda(); // the peer runs this JVM's UCX
    }

    @Override
    protected boolean receivesArrayFrames() {
        return false;
    }

    @Override
    protected boolean stagesHeapFrames() {
        return true;
    }

    @Override
    protected Peer startPeer(String... args) throws IOException {
        return start(peerJvm(ConformancePeer.class).args(args));
    }

    /**
     * Whether device frames go UCX's direct path (its {@code cuda_copy}/{@code cuda_ipc}, on CUDA devices): the
     * suite's two peer-death cases then do not apply as written, and {@link UcxCudaTransportTest} holds their
     * direct-path forms.
     */
    private static boolean direct() {
        return UcxTransport.carriesCuda() && Devices.selection().platform().equals("cuda");
    }

    /**
     * On the direct path the 256 MiB message is sent whole in the time the peer's watcher takes to see its half-way
     * mark (H200, 2026-12-02: the receive returned the message), so the peer cannot die mid-message;
     * {@link UcxCudaTransportTest} kills its peer by time instead.
     */
    @Test
    @Override
    void shouldFailTheReceiveWithinTheTimeoutWhenThePeerDiesMidMessage() throws Exception {
        assumeTrue(
                !direct(),
                "device frames go UCX's direct path, where the message is whole before the peer's"
                        + " watcher sees half of it: UcxCudaTransportTest kills its peer by time");
        super.shouldFailTheReceiveWithinTheTimeoutWhenThePeerDiesMidMessage();
    }

    /** On the direct path the peer's receive is not counted by the copy engine: see {@link UcxCudaTransportTest}. */
    @Test
    @Override
    void shouldFailTheSendWhenThePeerDiesWhileReceiving() throws Exception {
        assumeTrue(
                !direct(),
                "device frames go UCX's direct path, whose receiver cannot see its progress through the"
                        + " copy engine: UcxCudaTransportTest kills its peer by time");
        super.shouldFailTheSendWhenThePeerDiesWhileReceiving();
    }

    @Test
    void shouldTellUcxAndItsCudaSupportInTheCapabilities() throws Exception {
        Listener listener = listen(config().build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        assertEquals(Transports.UCX, c.transport());
        assertTrue(c.peer().transports().contains(Transports.UCX), c.peer().toString());
        assertEquals(UcxTransport.carriesCuda(), c.peer().ucxCarriesCuda());
        c.close();
        assertEquals(0, p.await(Duration.ofSeconds(30)), p::output);
    }

    @Test
    void shouldRefuseGarbageInsteadOfAHandshake() throws Exception {
        Listener listener = listen(config().build());
        String a = listener.address().substring("ucx://".length());
        int colon = a.lastIndexOf(':');
        try (Refusals refusals = new Refusals();
                Socket raw = new Socket()) {
            raw.connect(new InetSocketAddress(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1))));
            DataOutputStream out = new DataOutputStream(raw.getOutputStream());
            out.write("GET / HTTP/1.1\r\nHost: cuwire\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            refusals.await(
                    Duration.ofSeconds(10),
                    listener.address() + " refused ",
                    "ProtocolViolationException",
                    "not a cuwire transport");
            assertThrows(TransportTimeoutException.class, () -> listener.accept(Duration.ofMillis(100)));
        }
        assertEquals(0, host.peakBytes() + device.peakBytes());
    }

    @Test
    void shouldNameTheMissingLibraryWhenUcxCannotLoad(@TempDir Path dir) throws Exception {
        // an empty libucp.so.0 found first on the library path: the dynamic loader refuses it, as it would a
        // missing one
        Files.write(dir.resolve("libucp.so.0"), new byte[0]);
        try (ChildJvm child =
                peerJvm(TryUcx.class).env("LD_LIBRARY_PATH", dir.toString()).start()) {
            assertEquals(0, child.awaitExit(Duration.ofSeconds(30)), child::output);
            String out = child.output();
            assertTrue(out.contains("TransportUnavailableException: UCX not available: libucp.so.0"), out);
            assertTrue(out.contains("install libucx0"), out);
        }
    }

    /** Connects over UCX in a process where it may not load; prints what it got. */
    static final class TryUcx {
        private TryUcx() {}

        public static void main(String[] args) {
            for (int i = 0; i < 2; i++) {
                try {
                    Transports.forAddress("ucx://127.0.0.1:1")
                            .listen(
                                    "ucx://127.0.0.1:0",
                                    TransportConfig.builder()
                                            .allowUnauthenticated(true)
                                            .receiveInto(d -> null)
                                            .build())
                            .close();
                    System.out.println("UCX loaded");
                } catch (TransportException e) {
                    System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
                }
            }
            System.out.println(List.of("done"));
        }
    }
}
