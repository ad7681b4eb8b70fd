package io.cuwire.transport.internal.inproc;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.IdleStrategy;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.internal.AbstractConnection;
import io.cuwire.transport.internal.Frames;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.InFlight;
import io.cuwire.transport.internal.MessageRecorder;
import io.cuwire.transport.internal.RecordChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One end of an in-process connection. A send lends each frame to the receiver and puts the loans in the peer's
 * inbound queue; the send completes when the receiver has closed every loan. Nothing is copied, so the copy counts
 * of its metrics are zero by construction (no copy scope is opened). A receiver that refuses a message hands the
 * sender its refusal directly: the refused send, the sender's other sends in flight and its later uses fail with it.
 */
final class InProcessConnection extends AbstractConnection {
    private static final Object CLOSED = new Object();
    private static final byte[] EOF = new byte[0];
    private final TransportConfig config;
    private final String scheme;
    private final String address;
    private final InFlight inFlight;
    private final LinkedBlockingQueue<byte[]> handshakeIn = new LinkedBlockingQueue<>();
    private final LinkedBlockingDeque<Object> inbound = new LinkedBlockingDeque<>();
    /** Counts additions to {@link #inbound}: a lock-free hint for the receive spin. */
    private final AtomicInteger arrivals = new AtomicInteger();

    private final Set<Envelope> outstanding = ConcurrentHashMap.newKeySet();
    private final Object receiveLock = new Object();
    private InProcessConnection peer;
    private volatile Handshake.Result handshake;
    private volatile boolean closed;
    private volatile boolean peerClosed;
    /** Set by the peer before it closes over a message of this side it refused; {@code null} otherwise. */
    private volatile MessageRefusedException refusal;

    InProcessConnection(TransportConfig config, String scheme, String address) {
        super(scheme);
        this.config = config;
        this.scheme = scheme;
        this.address = address;
        this.inFlight = new InFlight(config.maxBytesInFlight());
    }

    static void link(InProcessConnection a, InProcessConnection b) {
        a.peer = b;
        b.peer = a;
    }

    void handshake(boolean client) {
        handshake = Handshake.run(
                new RecordChannel() {
                    @Override
                    public void writeRecord(byte[] record) {
                        peer.handshakeIn.add(record.clone());
                    }

                    @Override
                    public byte[] readRecord(int maxBytes, long deadlineNanos) {
                        byte[] r;
                        try {
                            r = handshakeIn.poll(deadlineNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new TransportException("interrupted during the handshake with " + address, e);
                        }
                        if (r == null) {
                            throw new TransportTimeoutException(
                                    "handshake with " + address + " took longer than " + config.handshakeTimeout());
                        }
                        if (r == EOF) {
                            throw new PeerClosedException("peer at " + address + " closed during the handshake");
                        }
                        if (r.length > maxBytes) {
                            throw new ProtocolViolationException(
                                    "handshake record of " + r.length + " bytes exceeds " + maxBytes);
                        }
                        return r;
                    }
                },
                config,
                client,
                Capabilities.local(config.families()),
                address,
                () -> {});
    }

    /** A message lent to the peer: completes its sender's future when every loan has come back. */
    private final class Envelope {
        final byte[] header;
        final List<Buffer> loans = new ArrayList<>();
        final List<MemoryKind> kinds = new ArrayList<>();
        final List<Long> lengths = new ArrayList<>();
        final long bytes;
        final long sentNanos = System.nanoTime();
        final MessageRecorder recorder;
        final CompletableFuture<MessageMetrics> future = new CompletableFuture<>();
        final AtomicInteger unreturned;
        volatile boolean dropped;

        Envelope(Message message) {
            this.header = message.header();
            this.bytes = message.totalBytes();
            this.unreturned = new AtomicInteger(message.frames().size());
            this.recorder = MessageRecorder.start(MessageMetrics.Direction.SENT, scheme, sentNanos, false);
            for (Buffer b : message.frames()) {
                kinds.add(b.kind());
                lengths.add(b.byteSize());
            }
        }

        void lend(Message message) {
            for (Buffer b : message.frames()) {
                loans.add(b.lend(this::loanReturned));
            }
        }

        void loanReturned() {
            if (unreturned.decrementAndGet() == 0) {
                finished();
            }
        }

        void finished() {
            if (!outstanding.remove(this)) {
                return;
            }
            inFlight.release(bytes);
            if (dropped) {
                future.completeExceptionally(
                        refusal != null
                                ? refusedError()
                                : new PeerClosedException(
                                        "peer at " + address + " closed before receiving the message"));
            } else {
                future.complete(recorder.finish(header.length, kinds, lengths));
            }
        }

        void fail(TransportException e) {
            if (outstanding.remove(this)) {
                inFlight.release(bytes);
                future.completeExceptionally(e);
            }
        }

        /** The receiver will not take it: give every loan back. */
        void drop() {
            dropped = true;
            for (Buffer loan : loans) {
                if (loan.isOpen()) {
                    loan.close();
                }
            }
        }
    }

    @Override
    protected Handshake.Result handshake() {
        return handshake;
    }

    @Override
    protected String peerName() {
        return address;
    }

    @Override
    public CompletableFuture<MessageMetrics> sendUnchecked(Message message) {
        checkUsable();
        Envelope env = new Envelope(message);
        try {
            if (!inFlight.acquire(env.bytes)) {
                checkUsable();
                throw new ConnectionClosedException("connection to " + address + " closed while sending");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportException("interrupted while waiting to send to " + address, e);
        }
        outstanding.add(env);
        try {
            env.lend(message);
        } catch (RuntimeException e) {
            env.fail(new TransportException("cannot lend the frames of " + message + ": " + e.getMessage(), e));
            env.drop();
            throw e;
        }
        if (!peer.deliver(env)) {
            env.drop();
            env.fail(new PeerClosedException("peer at " + address + " is closed"));
            return env.future;
        }
        if (env.loans.isEmpty()) {
            env.finished();
        }
        if (closed) {
            env.fail(new ConnectionClosedException("connection to " + address + " closed while sending"));
        }
        return env.future;
    }

    private void checkUsable() {
        if (closed) {
            throw new ConnectionClosedException("connection to " + address + " is closed");
        }
        if (refusal != null) {
            throw refusedError();
        }
        if (peerClosed) {
            throw new PeerClosedException("peer at " + address + " closed the connection");
        }
    }

    /** A copy of the peer's refusal, with its own stack. */
    private MessageRefusedException refusedError() {
        MessageRefusedException r = refusal;
        return new MessageRefusedException(r.getMessage(), r.reason(), r);
    }

    private synchronized boolean deliver(Envelope env) {
        if (closed) {
            return false;
        }
        inbound.add(env);
        arrivals.incrementAndGet();
        return true;
    }

    @Override
    public ReceivedMessage receive(Duration timeout) {
        synchronized (receiveLock) {
            int seen = arrivals.get();
            Object next = inbound.pollFirst();
            if (next == null) {
                IdleStrategy idle = config.idle();
                long spinStart = System.nanoTime();
                while (arrivals.get() == seen && idle.keepSpinning(System.nanoTime() - spinStart, () -> false)) {
                    Thread.onSpinWait();
                }
                next = inbound.pollFirst();
            }
            try {
                if (next == null) {
                    next = timeout == null ? inbound.take() : inbound.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransportException("interrupted while receiving from " + address, e);
            }
            if (next == null) {
                throw new TransportTimeoutException("no message from " + address + " within " + timeout);
            }
            if (next == CLOSED) {
                inbound.addFirst(CLOSED);
                checkUsable();
                throw new PeerClosedException("peer at " + address + " closed the connection");
            }
            @SuppressWarnings("unchecked")
            Envelope env = (Envelope) next;
            MessageRecorder recorder =
                    MessageRecorder.start(MessageMetrics.Direction.RECEIVED, scheme, env.sentNanos, false);
            Serialized.Header header;
            try {
                header = Frames.parseHeader(env.header, config, address, handshake.families());
            } catch (ProtocolViolationException e) {
                // the sender learns why before it sees this side close
                MessageRefusedException r = Frames.refused(address, Frames.refusal(e));
                peer.refusal = r;
                env.fail(new MessageRefusedException(r.getMessage(), r.reason(), r));
                env.drop();
                close();
                throw e;
            }
            Serialized value = Serialized.received(header, env.loans);
            return new ReceivedMessage(value, recorder.finish(env.header.length, env.kinds, env.lengths));
        }
    }

    @Override
    public long bytesInFlight() {
        return inFlight.used();
    }

    @Override
    public boolean isOpen() {
        return !closed && !peerClosed;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        inFlight.close();
        // Fail this side's sends first: once the peer learns of the close it drops what it holds, and a dropped
        // send would otherwise complete with the peer's PeerClosedException instead of this close's error.
        for (Envelope env : List.copyOf(outstanding)) {
            env.fail(new ConnectionClosedException(
                    "connection to " + address + " closed with the message in " + "flight"));
        }
        InProcessConnection p = peer;
        p.peerClosed = true;
        p.inFlight.close();
        p.handshakeIn.add(EOF);
        p.inbound.add(CLOSED);
        p.arrivals.incrementAndGet();
        Object o;
        while ((o = inbound.pollFirst()) != null) {
            if (o instanceof InProcessConnection.Envelope env) {
                env.drop();
            }
        }
        inbound.add(CLOSED);
    }

    @Override
    public String toString() {
        return "InProcessConnection[" + address + (closed ? ", closed" : "") + "]";
    }
}
