package io.cuwire.transport.internal.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.Listener;
import io.cuwire.transport.MessageAuthenticationException;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TestMessages;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.socket.Sockets;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * With a secret on both sides, part 0 of every UCX message carries a tag of the connection's session keys over its
 * preamble and header: a secret holder's raw client (a UCX worker of its own driven from the wire format, in this
 * JVM) whose header changed by one bit after tagging, that replays a message under the next message's UCX tag, or
 * that sends one tagged for another connection is refused with a {@link MessageAuthenticationException} before the
 * header is parsed (no frame allocated), and gets a refusal on the bootstrap socket whose own tag checks.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class UcxMessageAuthenticationTest {
    private static final byte[] READY = {'R'};
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final AtomicInteger allocations = new AtomicInteger();
    private TransportConfig config;
    private Listener listener;

    /** A raw client: its bootstrap socket, its UCX worker connected to the listener's, the handshake's keys. */
    private record Raw(Bootstrap bootstrap, UcxAgent agent, Handshake.Result handshake) {}

    @BeforeEach
    void open() {
        assumeTrue(Ucx.available(), "needs the system UCX (libucx0)");
        config = TransportConfig.builder()
                .secret(TestMessages.SECRET)
                .ioTimeout(Duration.ofSeconds(10))
                .receiveInto(d -> {
                    allocations.incrementAndGet();
                    throw new IllegalStateException("these messages have no frames");
                })
                .build();
        listener = Transports.ucx().listen("ucx://127.0.0.1:0", config);
    }

    @AfterEach
    void close() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        if (listener != null) {
            listener.close();
        }
    }

    /** Connects a raw client as {@link UcxConnection} does: handshake, worker addresses, ready records. */
    private Raw connect() throws Exception {
        SocketChannel channel = Sockets.open(Transports.UCX, listener.address(), config);
        Handshake.Result handshake = Sockets.handshake(channel, config, Capabilities.local(config.families()));
        Bootstrap bootstrap = new Bootstrap(channel.socket());
        UcxAgent agent = new UcxAgent(Ucx.get(), "raw", config.idle());
        toClose.add(bootstrap);
        toClose.add(() -> agent.close(0));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        ByteBuffer address = agent.workerAddress(TimeUnit.SECONDS.toNanos(10));
        byte[] mine = new byte[address.remaining()];
        address.duplicate().get(mine);
        bootstrap.writeRecord(mine);
        byte[] theirs = bootstrap.readRecord(64 << 10, deadline);
        agent.connect(ByteBuffer.wrap(theirs), () -> {}).get(10, TimeUnit.SECONDS);
        bootstrap.writeRecord(READY);
        bootstrap.readRecord(1, deadline);
        bootstrap.authenticate(handshake.keys());
        return new Raw(bootstrap, agent, handshake);
    }

    private Connection accept() {
        Connection c = listener.accept(Duration.ofSeconds(30));
        toClose.add(c);
        return c;
    }

    /** Part 0 of a message of no frames labelled {@code label}, tagged as message {@code seq} with {@code keys}. */
    private static ByteBuffer part0(Handshake.Result keys, long seq, String label) {
        byte[] header = TestMessages.message(label, List.of()).header();
        int covered = UcxConnection.PREAMBLE_BYTES + header.length;
        ByteBuffer part = ByteBuffer.allocateDirect(covered + 16);
        part.put((byte) 1)
                .putInt(4 << 20)
                .putInt(UcxConnection.HOST_PART_BYTES)
                .putInt(header.length)
                .put(header);
        part.put(keys.keys().sending("test").seal(seq, part.duplicate().flip()));
        return part.flip();
    }

    private static void send(Raw raw, ByteBuffer part, long seq) throws Exception {
        MemorySegment s = MemorySegment.ofBuffer(part);
        raw.agent()
                .send(s.address(), s.byteSize(), UcxConnection.tag(seq, 0), UcxAgent.HOST)
                .get(10, TimeUnit.SECONDS);
    }

    /** The refusal the listener's side sent on the bootstrap socket, its tag checked. */
    private static String refusal(Raw raw) {
        Bootstrap.Goodbye bye = raw.bootstrap().awaitGoodbye();
        assertNull(bye.forged(), "the refusal's tag checks");
        assertNotNull(bye.refusal(), "a refusal, not " + bye);
        return new String(bye.refusal(), StandardCharsets.UTF_8);
    }

    @Test
    void shouldAcceptAFirstPartTaggedAsTheTransportTagsIt() throws Exception {
        Raw raw = connect();
        Connection c = accept();
        send(raw, part0(raw.handshake(), 0, "first"), 0);
        send(raw, part0(raw.handshake(), 1, "second"), 1);
        try (ReceivedMessage m = c.receive()) {
            assertEquals("first", m.value().root());
        }
        try (ReceivedMessage m = c.receive()) {
            assertEquals("second", m.value().root());
        }
    }

    @Test
    void shouldRefuseAChangedHeaderBeforeParsingIt() throws Exception {
        Raw raw = connect();
        Connection c = accept();
        ByteBuffer part = part0(raw.handshake(), 0, "changed");
        part.put(part.limit() - 17, (byte) (part.get(part.limit() - 17) ^ 1));
        send(raw, part, 0);
        MessageAuthenticationException e = assertThrows(MessageAuthenticationException.class, c::receive);
        assertTrue(e.getMessage().startsWith("the message header from "), e.getMessage());
        assertEquals(0, allocations.get());
        assertTrue(refusal(raw).startsWith("MessageAuthenticationException: the message header from "));
    }

    @Test
    void shouldRefuseAReplayedMessage() throws Exception {
        Raw raw = connect();
        Connection c = accept();
        ByteBuffer first = part0(raw.handshake(), 0, "once");
        send(raw, first, 0);
        c.receive().close();
        send(raw, first.rewind(), 1);
        assertThrows(MessageAuthenticationException.class, c::receive);
        assertTrue(refusal(raw).startsWith("MessageAuthenticationException: "));
    }

    @Test
    void shouldRefuseAMessageTaggedForAnotherConnection() throws Exception {
        Raw a = connect();
        accept();
        Raw b = connect();
        Connection cb = accept();
        send(b, part0(a.handshake(), 0, "spliced"), 0);
        assertThrows(MessageAuthenticationException.class, cb::receive);
        assertTrue(refusal(b).startsWith("MessageAuthenticationException: "));
    }
}
