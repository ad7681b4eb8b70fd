package io.cuwire.transport;

import java.io.IOException;

/** The model-shape suite over TCP, the peer in a child JVM. */
class TcpModelShapesTest extends ModelShapeConformanceSuite {
    @Override
    protected Transport transport() {
        return Transports.tcp();
    }

    @Override
    protected String listenAddress() {
        return "tcp://127.0.0.1:0";
    }

    @Override
    protected TransportConformanceSuite.Peer startPeer(String... args) throws IOException {
        return TransportConformanceSuite.start(
                TransportConformanceSuite.peerJvm(ModelShapePeer.class).args(args));
    }
}
