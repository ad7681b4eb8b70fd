package io.cuwire.bench.transport;

import io.cuwire.bench.harness.Secrets;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.Transports;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What connections that never authenticate cost a listener, in this JVM: resident memory ({@code VmRSS}), direct
 * buffers ({@link BufferPoolMXBean} {@code direct}) and platform threads, before and after, with no garbage
 * collection in between. A thread accepts as a worker does. The peers are plain sockets in this JVM, from 127.0.0.2 …
 * 127.0.0.9 in turn.
 * <ul>
 *   <li>{@code idle}: {@code n} connections each send the start of a hello and stay open; measured once the listener
 *       holds all {@code n} in their handshake (its bounds raised to let it);</li>
 *   <li>{@code churn}: {@code n} connections one after the other each send 8 bytes that are not a handshake and
 *       close; measured once the listener has refused them all.</li>
 * </ul>
 *
 * <pre>
 * java -Xmx2g -cp "cuwire-bench/target/cuwire-bench.jar:cuwire-bench/target/lib/*" \
 *     io.cuwire.bench.transport.UnauthenticatedConnectionsBench idle|churn [n=4000] [tcp|ipc]
 * </pre>
 *
 * <p>The listener's secret is new each run ({@link Secrets}); no peer ever proves it. The listener's count of peers
 * in their handshake is {@link Listener#handshaking()}.
 */
public final class UnauthenticatedConnectionsBench {
    private UnauthenticatedConnectionsBench() {}

    /** One measurement of this process. */
    record Sample(long rssBytes, long directBytes, long directBuffers, int platformThreads) {
        static Sample now() throws IOException {
            long rss = 0;
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    rss = Long.parseLong(line.replaceAll("[^0-9]", "")) << 10;
                }
            }
            BufferPoolMXBean direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                    .filter(b -> b.getName().equals("direct"))
                    .findFirst()
                    .orElseThrow();
            return new Sample(
                    rss,
                    direct.getMemoryUsed(),
                    direct.getCount(),
                    ManagementFactory.getThreadMXBean().getThreadCount());
        }

        String row(String label) {
            return String.format(
                    Locale.ROOT,
                    "%-28s RSS %8.1f MiB   direct %8.1f MiB in %5d buffers   %4d threads",
                    label,
                    rssBytes / 1048576.0,
                    directBytes / 1048576.0,
                    directBuffers,
                    platformThreads);
        }
    }

    /** What {@code n} connections cost: the samples before and after, and the seconds it took to open them. */
    record Result(Sample before, Sample after, int connections, double seconds) {}

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "idle";
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 4000;
        String scheme = args.length > 2 ? args[2] : Transports.TCP;
        run(mode, n, scheme, System.out);
    }

    /**
     * Opens {@code n} connections that never authenticate ({@code idle} or {@code churn}) to a listener of
     * {@code scheme} in this JVM and prints what they cost to {@code out}.
     *
     * @throws IllegalArgumentException for a mode other than {@code idle} or {@code churn}
     * @throws IllegalStateException when the listener does not reach the expected count of handshakes within 60 s
     */
    static Result run(String mode, int n, String scheme, PrintStream out) throws Exception {
        if (!mode.equals("idle") && !mode.equals("churn")) {
            throw new IllegalArgumentException("mode must be idle or churn, not " + mode);
        }
        BufferAllocator<HostBuffer> host = BufferAllocator.host("bench-host", BufferAllocator.UNLIMITED);
        BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("bench-device", BufferAllocator.UNLIMITED);
        TransportConfig config = TransportConfig.builder()
                .secret(Secrets.generate())
                .receiveInto(DeviceMap.of(host, device))
                .handshakeTimeout(Duration.ofSeconds(120))
                .maxUnauthenticated(n + 64, n + 64)
                .build();
        String address = scheme + "://127.0.0.1:0";
        try (host;
                device;
                Listener listener = Transports.forAddress(address).listen(address, config)) {
            Thread.ofPlatform().daemon().name("bench-accept").start(() -> acceptLoop(listener));
            InetSocketAddress target = socketAddress(listener.address());
            System.gc();
            Thread.sleep(500);
            Sample before = Sample.now();
            List<SocketChannel> peers = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) {
                SocketChannel s = SocketChannel.open();
                s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0." + (2 + i % 8)), 0));
                s.connect(target);
                if (mode.equals("idle")) {
                    s.write(ByteBuffer.allocate(14).putInt(0, 100));
                    peers.add(s);
                } else {
                    s.write(ByteBuffer.wrap("GET / HT".getBytes(StandardCharsets.US_ASCII)));
                    s.close();
                }
            }
            long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (mode.equals("idle") ? listener.handshaking() < n : listener.handshaking() > 0) {
                if (System.nanoTime() > end) {
                    throw new IllegalStateException("the listener holds " + listener.handshaking() + " handshakes");
                }
                Thread.sleep(20);
            }
            if (!mode.equals("idle")) {
                Thread.sleep(1000); // the last refusals' records and closes
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            Sample after = Sample.now();
            out.println(before.row("before"));
            out.println(after.row(String.format(Locale.ROOT, "%s: %d connections", mode, n)));
            out.printf(
                    Locale.ROOT,
                    "per connection: RSS %.1f KiB, direct %.2f KiB; %.1f s to open them%n",
                    (after.rssBytes - before.rssBytes) / 1024.0 / n,
                    (after.directBytes - before.directBytes) / 1024.0 / n,
                    seconds);
            for (SocketChannel s : peers) {
                s.close();
            }
            return new Result(before, after, n, seconds);
        }
    }

    private static void acceptLoop(Listener listener) {
        while (true) {
            try {
                Connection c = listener.accept();
                c.close();
            } catch (io.cuwire.transport.ConnectionClosedException e) {
                return;
            } catch (TransportException e) {
                // a refused peer: next
            }
        }
    }

    private static InetSocketAddress socketAddress(String address) {
        String hostPort = address.substring(address.indexOf("://") + 3);
        int colon = hostPort.lastIndexOf(':');
        return new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    }
}
