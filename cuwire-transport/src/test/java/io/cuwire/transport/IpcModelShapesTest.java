package io.cuwire.transport;

import java.io.IOException;

/** The model-shape suite over CUDA IPC (the emulated device's shared memory without a GPU), the peer in a child JVM. */
class IpcModelShapesTest extends ModelShapeConformanceSuite {
    @Override
    protected Transport transport() {
        return Transports.ipc();
    }

    @Override
    protected String listenAddress() {
        return "ipc://127.0.0.1:0";
    }

    @Override
    protected TransportConformanceSuite.Peer startPeer(String... args) throws IOException {
        return TransportConformanceSuite.start(
                TransportConformanceSuite.peerJvm(ModelShapePeer.class).args(args));
    }
}
