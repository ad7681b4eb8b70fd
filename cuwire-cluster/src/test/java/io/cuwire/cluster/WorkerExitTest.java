package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.serialize.LimitExceededException;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.FamilyRefusedException;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/** The exit code a broken client connection gives, by its cause. */
class WorkerExitTest {
    @Test
    void shouldTellAProtocolViolationFromALostClientFromAFailureOfTheWorker() {
        assertEquals(WorkerExit.PROTOCOL_VIOLATION, Worker.exitFor(new ProtocolViolationException("garbage")));
        assertEquals(
                WorkerExit.PROTOCOL_VIOLATION,
                Worker.exitFor(new FamilyRefusedException("refused", List.of(), List.of())));
        assertEquals(WorkerExit.PROTOCOL_VIOLATION, Worker.exitFor(new LimitExceededException("beyond a budget")));
        assertEquals(WorkerExit.CLIENT_LOST, Worker.exitFor(new PeerClosedException("gone")));
        assertEquals(WorkerExit.CLIENT_LOST, Worker.exitFor(new TransportTimeoutException("stalled")));
        assertEquals(WorkerExit.CLIENT_LOST, Worker.exitFor(new MessageRefusedException("refused ours", "why")));
        assertEquals(WorkerExit.CLIENT_LOST, Worker.exitFor(new CompletionException(new PeerClosedException("gone"))));
        assertEquals(WorkerExit.CLIENT_LOST, Worker.exitFor(new ConnectionClosedException("closed")));
        assertEquals(WorkerExit.ERROR, Worker.exitFor(new TransportException("cannot allocate frame 0")));
        assertEquals(WorkerExit.ERROR, Worker.exitFor(new IllegalStateException("a bug")));
        assertEquals(WorkerExit.ERROR, Worker.exitFor(new OutOfMemoryError("heap")));
    }

    @Test
    void shouldGiveEachExitItsOwnCode() {
        Set<Integer> codes = new HashSet<>();
        for (WorkerExit e : WorkerExit.values()) {
            codes.add(e.code());
            assertEquals(e, WorkerExit.of(e.code()));
        }
        assertEquals(WorkerExit.values().length, codes.size());
        assertEquals(0, WorkerExit.CLOSED.code());
        assertEquals(3, WorkerExit.LEAK.code(), "the code a leak at shutdown always had");
    }
}
