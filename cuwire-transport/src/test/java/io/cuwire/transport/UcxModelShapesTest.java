package io.cuwire.transport;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.transport.internal.ucx.UcxTransport;
import java.io.IOException;

/** The model-shape suite over UCX, the peer in a child JVM; skipped, with the reason, where UCX does not load. */
class UcxModelShapesTest extends ModelShapeConformanceSuite {
    @Override
    protected void assumeUsable() {
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
    protected TransportConformanceSuite.Peer startPeer(String... args) throws IOException {
        return TransportConformanceSuite.start(
                TransportConformanceSuite.peerJvm(ModelShapePeer.class).args(args));
    }
}
