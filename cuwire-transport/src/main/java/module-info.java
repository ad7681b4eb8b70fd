/**
 * The transport API ({@link io.cuwire.transport.Transports}, {@link io.cuwire.transport.Connection}, ...) and its
 * provider SPI ({@link io.cuwire.transport.spi.TransportProvider}); provides TCP, CUDA IPC, UCX and in-process
 * transports. UCX needs JUCX ({@code org.openucx:jucx}, optional): on the module path add it with
 * {@code --add-modules jucx}. Maps shared memory and calls native code: run with
 * {@code --enable-native-access=io.cuwire.transport} (README, "Add cuwire to your build").
 */
module io.cuwire.transport {
    requires transitive io.cuwire.serialize;
    requires jdk.jfr;
    // JUCX is an automatic module, named after its jar; optional: Ucx explains its absence
    requires static jucx;

    exports io.cuwire.transport;
    exports io.cuwire.transport.spi;

    uses io.cuwire.transport.spi.TransportProvider;

    provides io.cuwire.transport.spi.TransportProvider with
            io.cuwire.transport.internal.tcp.TcpProvider,
            io.cuwire.transport.internal.ipc.IpcProvider,
            io.cuwire.transport.internal.ucx.UcxProvider,
            io.cuwire.transport.internal.inproc.InProcessProvider;
}
