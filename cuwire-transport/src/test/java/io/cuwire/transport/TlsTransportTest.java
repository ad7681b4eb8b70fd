package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The conformance suite over TCP with TLS forced on at both ends (the listener {@link TlsMode#ON}, so it refuses any
 * peer that does not speak TLS; the peer in its own JVM with {@value TlsMode#PROPERTY}{@code =on}): every message,
 * header, host frame and staged device frame crosses inside TLS. The peer's TLS keys are good for 1 MiB each
 * ({@code jdk.tls.keyLimits}), so that long transfers run through key updates both ways (the peer's at its limit, this
 * side's in answer).
 */
class TlsTransportTest extends TransportConformanceSuite {
    @Override
    protected Transport transport() {
        return Transports.tcp();
    }

    @Override
    protected String listenAddress() {
        return "tcp://127.0.0.1:0";
    }

    @Override
    protected TransportConfig.Builder config() {
        // a peer's first TLS handshake, in a fresh JVM on a busy machine, may take seconds
        return super.config().tls(TlsMode.ON).handshakeTimeout(Duration.ofSeconds(20));
    }

    @Override
    protected boolean peerInOwnProcess() {
        return true;
    }

    @Override
    protected boolean stagesDeviceFrames() {
        return true;
    }

    @Override
    protected boolean receivesSmallDeviceFramesInBlocks() {
        return true;
    }

    @Override
    protected boolean receivesArrayFrames() {
        return true;
    }

    @Override
    protected boolean stagesHeapFrames() {
        return true;
    }

    private static Path keyLimits;

    @Override
    protected Peer startPeer(String... args) throws IOException {
        synchronized (TlsTransportTest.class) {
            if (keyLimits == null) {
                keyLimits = Files.createTempFile("cuwire-tls-key-limits", ".properties");
                keyLimits.toFile().deleteOnExit();
                Files.writeString(
                        keyLimits,
                        "jdk.tls.keyLimits=AES/GCM/NoPadding KeyUpdate 2^20, " + "ChaCha20-Poly1305 KeyUpdate 2^20\n");
            }
        }
        // C2 too: the JDK's AES-GCM runs at its intrinsic's speed only there, and the peer encrypts whole transfers
        return start(peerJvm(ConformancePeer.class)
                .jvmOptions("-XX:TieredStopAtLevel=4")
                .property(TlsMode.PROPERTY, "on")
                .property("java.security.properties", keyLimits.toString())
                .args(args));
    }

    /** What makes the suite above a TLS suite: this listener takes no plaintext, not even from loopback. */
    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void shouldRefuseAPlaintextClientWithWhatToSet() {
        Listener listener = listen(config().build());
        TransportConfig plaintext = config().tls(TlsMode.AUTO).build();
        ProtocolViolationException e = assertThrows(
                ProtocolViolationException.class,
                () -> transport().connect(listener.address(), plaintext).close());
        assertTrue(
                e.getMessage()
                        .contains("TLS required (listener tls ON): set the client's TransportConfig.tls(ON)"
                                + " or -Dcuwire.transport.tls=on"),
                e.getMessage());
        try (Connection c = transport().connect(listener.address(), config().build())) {
            assertTrue(c.isOpen());
            accept(listener);
        }
        assertThrows(TransportTimeoutException.class, () -> listener.accept(Duration.ofMillis(50)));
    }
}
