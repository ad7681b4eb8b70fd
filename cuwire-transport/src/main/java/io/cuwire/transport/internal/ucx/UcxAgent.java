package io.cuwire.transport.internal.ucx;

import io.cuwire.memory.Devices;
import io.cuwire.transport.IdleStrategy;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpRequestParams;
import org.openucx.jucx.ucp.UcpTagMessage;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * The progress agent of one UCX worker: a platform thread that owns the worker and its one endpoint and makes every
 * UCX call on them. Other threads hand it work ({@link #send}, {@link #receive}, {@link #probe}) and get futures,
 * completed on this thread from UCX's callbacks; keep what runs on them short.
 *
 * <p>Duty cycle: run the queued commands, {@code ucp_worker_progress}, poll the pending probes; when nothing happened,
 * back off as the connection's {@link IdleStrategy} does (spin for its spin, then wait from 1 µs, doubling up to
 * {@value #MAX_PARK_MICROS_BUSY} µs while requests are outstanding, {@value #MAX_PARK_MICROS_IDLE} µs when idle); a
 * new command wakes it at once. Where the context has UCX's wake-up feature ({@link Ucx#wakeup()}) the agent waits on
 * the worker's event descriptor ({@code ucp_worker_arm}, then {@code ppoll}), so that a message or a completion wakes
 * it as a command does, and the back-off only bounds the wait; otherwise it parks, and what comes from the network
 * waits for the park's end (a 1 KiB round trip took 682 µs so on an H200 host, 12 × IPC's, 2026-12-02).
 *
 * <p>Every request names its memory type explicitly ({@code UCS_MEMORY_TYPE_HOST} or {@code UCS_MEMORY_TYPE_CUDA}):
 * JUCX 1.16's default is the 1.16 numbering of "unknown", which UCX 1.13 refuses.
 *
 * <p>Close ({@link #close}): refuses new work, cancels outstanding receives and probes, closes the endpoint without
 * blocking (flush when nothing is outstanding, force otherwise: outstanding sends then complete as cancelled) and
 * keeps progressing until the close request and every outstanding request are done or {@code linger} passes; then
 * destroys the worker, fails what is still pending and ends the thread. A blocking {@code UcpEndpoint.close()} after
 * transfers was seen to hang, hence all this.
 */
final class UcxAgent implements AutoCloseable {
    static final int HOST = UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST;
    static final int CUDA = UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_CUDA;
    private static final long MAX_PARK_MICROS_BUSY = 50;
    private static final long MAX_PARK_MICROS_IDLE = 1000;

    /** A UCX request failed: its status and UCX's text. */
    static final class RequestFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int status;

        RequestFailure(int status, String message) {
            super(message + " (UCX status " + status + ")", null, false, false);
            this.status = status;
        }

        boolean cancelled() {
            return status == UcsConstants.STATUS.UCS_ERR_CANCELED;
        }

        boolean truncated() {
            return status == UcsConstants.STATUS.UCS_ERR_MESSAGE_TRUNCATED;
        }
    }

    /** The agent was closed (or never started) before the work ran or finished. */
    static final class AgentClosed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        AgentClosed(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * A request in flight; completed once. Its future tells no received size: JUCX 1.16 over UCX 1.13 reports 0
     * for a receive that completes at once from UCX's unexpected queue, so sizes come from the protocol instead (a
     * longer message than posted fails as truncated).
     */
    private final class Op extends UcxCallback {
        final CompletableFuture<Void> future = new CompletableFuture<>();
        final boolean receive;
        UcpRequest request;

        Op(boolean receive) {
            this.receive = receive;
        }

        @Override
        public void onSuccess(UcpRequest r) {
            outstanding.remove(this);
            future.complete(null);
        }

        @Override
        public void onError(int status, String message) {
            outstanding.remove(this);
            future.completeExceptionally(new RequestFailure(status, message));
        }
    }

    /** A probe for one tag, polled each cycle until it matches or is cancelled. */
    private record Probe(long tag, CompletableFuture<UcpTagMessage> future) {}

    /** Work for the agent's thread; failed instead of run once the agent stops. */
    private record Command(CompletableFuture<?> future, Runnable action) {}

    private final String name;
    private final IdleStrategy idle;
    private final boolean peerErrorHandling;
    private final Queue<Command> commands = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private final CompletableFuture<ByteBuffer> started = new CompletableFuture<>();
    private final CompletableFuture<Void> terminated = new CompletableFuture<>();
    private final UcpRequestParams hostParams = new UcpRequestParams().setMemoryType(HOST);
    private final UcpRequestParams cudaParams = new UcpRequestParams().setMemoryType(CUDA);
    // touched on the agent thread only
    private final Set<Op> outstanding = new HashSet<>();
    private final List<Probe> probes = new ArrayList<>();
    private UcpWorker worker;
    private UcpEndpoint endpoint;
    private volatile boolean stopping;
    private volatile long lingerNanos;
    private volatile Runnable onEndpointError = () -> {};
    // the worker's event descriptor, waited on instead of parking (null: park); set and used on the agent thread only
    private EventWait events;
    // whether the agent is (about to be) waiting on it, so that a command must signal the worker to wake it
    private volatile boolean waiting;
    // guards signalling the worker from other threads against its destruction
    private final Object signalLock = new Object();
    private boolean signalable;

    /** Starts the agent's thread, which creates the worker in {@code ucx}'s context and idles as {@code idle} says. */
    UcxAgent(Ucx ucx, String name, IdleStrategy idle) {
        this.name = name;
        this.idle = idle;
        this.peerErrorHandling = ucx.peerErrorHandling();
        this.thread =
                Thread.ofPlatform().daemon().name("cuwire-" + name + "-ucx").start(() -> run(ucx));
    }

    /**
     * The worker's address, for the peer's endpoint; waits for the worker to exist.
     *
     * @throws AgentClosed if the worker could not be made
     */
    ByteBuffer workerAddress(long timeoutNanos) {
        try {
            return started.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new AgentClosed("cannot create a UCX worker: " + e.getCause().getMessage());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AgentClosed("creating a UCX worker took longer than " + timeoutNanos / 1_000_000 + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AgentClosed("interrupted while creating a UCX worker");
        }
    }

    /** Connects the worker's endpoint to the peer's worker at {@code peerAddress}; {@code onError} runs on failure. */
    CompletableFuture<Void> connect(ByteBuffer peerAddress, Runnable onError) {
        this.onEndpointError = onError;
        CompletableFuture<Void> done = new CompletableFuture<>();
        submit(done, () -> {
            ByteBuffer direct = ByteBuffer.allocateDirect(peerAddress.remaining())
                    .put(peerAddress.duplicate())
                    .flip();
            UcpEndpointParams params =
                    new UcpEndpointParams().setUcpAddress(direct).setName(name);
            if (peerErrorHandling) {
                params.setPeerErrorHandlingMode().setErrorHandler((ep, status, message) -> {
                    onEndpointError.run();
                });
            }
            endpoint = worker.newEndpoint(params);
            done.complete(null);
        });
        return done;
    }

    /** Sends {@code length} bytes at {@code address} (memory type {@code memoryType}) tagged {@code tag}. */
    CompletableFuture<Void> send(long address, long length, long tag, int memoryType) {
        Op op = new Op(false);
        submit(op.future, () -> {
            post(op, () -> endpoint.sendTaggedNonBlocking(address, length, tag, op, params(memoryType)));
        });
        return op.future;
    }

    /** Receives the message tagged exactly {@code tag} into {@code length} bytes at {@code address}. */
    CompletableFuture<Void> receive(long address, long length, long tag, int memoryType) {
        Op op = new Op(true);
        submit(op.future, () -> {
            post(op, () -> worker.recvTaggedNonBlocking(address, length, tag, -1L, op, params(memoryType)));
        });
        return op.future;
    }

    /** Receives a message found by {@link #probe} into {@code length} bytes at {@code address}. */
    CompletableFuture<Void> receive(UcpTagMessage message, long address, long length, int memoryType) {
        Op op = new Op(true);
        submit(op.future, () -> {
            post(op, () -> worker.recvTaggedMessageNonBlocking(address, length, message, op, params(memoryType)));
        });
        return op.future;
    }

    /** Waits, without receiving it, for a message tagged exactly {@code tag}; it is then taken from UCX's queue. */
    CompletableFuture<UcpTagMessage> probe(long tag) {
        CompletableFuture<UcpTagMessage> f = new CompletableFuture<>();
        submit(f, () -> probes.add(new Probe(tag, f)));
        return f;
    }

    /**
     * Stops polling for {@code probe} and fails it with {@code why}, unless it matched first; either way the probe's
     * future is complete once the returned future is.
     */
    CompletableFuture<Void> cancelProbe(CompletableFuture<UcpTagMessage> probe, RuntimeException why) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        submit(done, () -> {
            probes.removeIf(p -> p.future == probe);
            probe.completeExceptionally(why);
            done.complete(null);
        });
        return done;
    }

    private void post(Op op, java.util.function.Supplier<UcpRequest> call) {
        outstanding.add(op);
        try {
            op.request = call.get();
        } catch (RuntimeException e) {
            outstanding.remove(op);
            throw e;
        }
    }

    private UcpRequestParams params(int memoryType) {
        return memoryType == CUDA ? cudaParams : hostParams;
    }

    private void submit(CompletableFuture<?> future, Runnable command) {
        if (stopping) {
            future.completeExceptionally(new AgentClosed(name + " is closed"));
            return;
        }
        commands.add(new Command(future, command));
        if (stopping) {
            drainRefused();
        }
        wake();
    }

    /**
     * Wakes the agent's thread: unparks it and, while it waits on its worker's events, signals the worker. A command
     * queued before this call is seen: the agent marks itself waiting before it arms the worker and looks at the queue
     * after, and a signal before the arm makes the arm report events (both sides' accesses are volatile).
     */
    private void wake() {
        LockSupport.unpark(thread);
        if (waiting) {
            synchronized (signalLock) {
                if (signalable) {
                    worker.signal();
                }
            }
        }
    }

    private void run(Ucx ucx) {
        try {
            // UCX's CUDA transports query and copy device memory in the thread's current CUDA context; without one,
            // cuda_copy's cuMemGetAddressRange fails ("invalid device context"), the memory is taken for host memory
            // and copied as such (a SIGSEGV on the H200 host, 2026-12-02). Every UCX call of this worker is made here.
            if (!Devices.all().isEmpty()) {
                Devices.all().getFirst().makeCurrentForNativeLibraries();
            }
            worker = ucx.context().newWorker(new UcpWorkerParams());
            if (ucx.wakeup()) {
                try {
                    events = new EventWait(worker.getEventFD());
                    synchronized (signalLock) {
                        signalable = true;
                    }
                } catch (RuntimeException e) {
                    events = null; // no event descriptor: the agent parks as without the wake-up feature
                }
            }
            started.complete(worker.getAddress());
        } catch (RuntimeException e) {
            started.completeExceptionally(e);
            stopping = true;
            drainRefused();
            terminated.complete(null);
            return;
        }
        try {
            loop();
        } finally {
            linger();
            terminated.complete(null);
        }
    }

    private void loop() {
        IdleStrategy.Backoff backoff = idle.backoff();
        while (!stopping) {
            int work = runCommands();
            try {
                work += worker.progress();
            } catch (Exception e) {
                onEndpointError.run();
            }
            work += pollProbes();
            if (work > 0) {
                backoff.worked();
            } else {
                backoff.idle(
                        TimeUnit.MICROSECONDS.toNanos(
                                outstanding.isEmpty() ? MAX_PARK_MICROS_IDLE : MAX_PARK_MICROS_BUSY),
                        this::await);
            }
        }
    }

    /**
     * Waits at most {@code nanos} for the worker's events or a command: arms the worker (which reports events
     * already pending as busy: then there is work at once) and waits on its event descriptor; parks where there is
     * none.
     */
    private void await(long nanos) {
        if (events == null) {
            LockSupport.parkNanos(nanos);
            return;
        }
        waiting = true;
        try {
            try {
                worker.arm();
            } catch (UcxException busy) {
                return; // events pending (UCS_ERR_BUSY) or the worker failing: progress says which
            }
            if (!commands.isEmpty() || stopping) {
                return;
            }
            events.await(nanos);
        } finally {
            waiting = false;
        }
    }

    private int runCommands() {
        int n = 0;
        Command c;
        while ((c = commands.poll()) != null) {
            try {
                c.action.run();
            } catch (RuntimeException e) {
                c.future.completeExceptionally(e);
            }
            n++;
        }
        return n;
    }

    private int pollProbes() {
        int n = 0;
        for (Iterator<Probe> it = probes.iterator(); it.hasNext(); ) {
            Probe p = it.next();
            UcpTagMessage m = worker.tagProbeNonBlocking(p.tag, -1L, true);
            if (m != null) {
                it.remove();
                p.future.complete(m);
                n++;
            }
        }
        return n;
    }

    /** Closes the endpoint without blocking, progresses until it and all requests are done (bounded), frees all. */
    private void linger() {
        drainRefused();
        AgentClosed closed = new AgentClosed(name + " is closed");
        for (Probe p : probes) {
            p.future.completeExceptionally(closed);
        }
        probes.clear();
        long deadline = System.nanoTime() + lingerNanos;
        try {
            for (Op op : List.copyOf(outstanding)) {
                if (op.receive && op.request != null && !op.request.isCompleted()) {
                    worker.cancelRequest(op.request);
                }
            }
            UcpRequest closing = null;
            if (endpoint != null) {
                closing = outstanding.isEmpty() ? endpoint.closeNonBlockingFlush() : endpoint.closeNonBlockingForce();
            }
            while ((!outstanding.isEmpty() || (closing != null && !closing.isCompleted()))
                    && System.nanoTime() - deadline < 0) {
                if (worker.progress() == 0) {
                    Thread.onSpinWait();
                }
            }
        } catch (Exception e) {
            // failing anyway: whatever is left is failed below and freed with the worker
        }
        for (Op op : List.copyOf(outstanding)) {
            op.future.completeExceptionally(closed);
        }
        outstanding.clear();
        synchronized (signalLock) {
            signalable = false;
        }
        try {
            worker.close();
        } catch (RuntimeException e) {
            // the worker is gone either way
        }
        if (events != null) {
            events.close();
        }
        drainRefused();
    }

    /** Fails every queued command without running it; safe from any thread (it makes no UCX call). */
    private void drainRefused() {
        Command c;
        while ((c = commands.poll()) != null) {
            c.future.completeExceptionally(new AgentClosed(name + " is closed"));
        }
    }

    /**
     * Stops the agent as described in the class comment, spending at most {@code linger} on outstanding requests;
     * waits for the thread to end (unless called from it). Harmless twice.
     */
    void close(long lingerNanos) {
        this.lingerNanos = lingerNanos;
        stopping = true;
        wake();
        if (Thread.currentThread() != thread) {
            try {
                terminated.get(lingerNanos + TimeUnit.SECONDS.toNanos(5), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                // the thread is stuck in UCX; it is a daemon and will not hold the process
            }
        }
    }

    /**
     * Whether the agent waits on its worker's event descriptor when idle (else it parks); known once
     * {@link #workerAddress} returned.
     */
    boolean waitsOnEvents() {
        return events != null;
    }

    /** Whether the worker is destroyed (or was never made): no request can touch memory any more. */
    boolean isTerminated() {
        return terminated.isDone();
    }

    @Override
    public void close() {
        close(TimeUnit.SECONDS.toNanos(1));
    }

    @Override
    public String toString() {
        return "UcxAgent[" + name + (stopping ? ", stopping" : "") + "]";
    }
}
