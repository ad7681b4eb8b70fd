package io.cuwire.transport.internal.ipc;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Optional;

/**
 * Whether the peer process of an IPC connection (same host) is still alive, asked after every copy out of its
 * memory. It asks with {@code kill(pid, 0)}, one system call; {@link ProcessHandle#isAlive()} reads {@code /proc}
 * instead, which cost 10–20 µs per message on the H200 host (a JFR recording of the receiver). Like
 * {@code ProcessHandle}, it takes a process that exited but was not yet reaped by its parent (a zombie) as alive;
 * the connection's socket reports such a peer closed right after. Where libc's {@code kill} cannot be bound, it
 * falls back to {@code ProcessHandle}. A peer whose pid named no process of this one's view when the connection
 * was made (another pid namespace) cannot be asked, and counts as alive. One instance per connection, used by its
 * reader thread.
 */
final class PeerProcess {
    private static final int ESRCH = 3;
    private static final MethodHandle KILL;
    private static final StructLayout CALL_STATE;
    private static final VarHandle ERRNO;

    static {
        MethodHandle kill = null;
        StructLayout layout = null;
        VarHandle errno = null;
        try {
            Linker linker = Linker.nativeLinker();
            Linker.Option capture = Linker.Option.captureCallState("errno");
            layout = Linker.Option.captureStateLayout();
            errno = layout.varHandle(MemoryLayout.PathElement.groupElement("errno"));
            kill = bind(linker, capture);
        } catch (RuntimeException | LinkageError e) {
            kill = null;
        }
        KILL = kill;
        CALL_STATE = layout;
        ERRNO = errno;
    }

    @SuppressWarnings("restricted") // one downcall to libc's kill with signal 0, which sends nothing
    private static MethodHandle bind(Linker linker, Linker.Option capture) {
        return linker.defaultLookup()
                .find("kill")
                .map(kill -> linker.downcallHandle(
                        kill,
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
                        capture))
                .orElse(null);
    }

    private final long pid;
    private final Optional<ProcessHandle> handle;
    private final MemorySegment callState;

    PeerProcess(long pid) {
        this.pid = pid;
        this.handle = ProcessHandle.of(pid);
        this.callState = KILL == null ? null : Arena.ofAuto().allocate(CALL_STATE);
    }

    /** Whether the process is alive (or cannot be asked, see the class comment). */
    boolean isAlive() {
        if (handle.isEmpty()) {
            return true;
        }
        if (KILL != null && pid > 0 && pid <= Integer.MAX_VALUE) {
            int rc;
            try {
                rc = (int) KILL.invokeExact(callState, (int) pid, 0);
            } catch (Throwable t) {
                throw new IllegalStateException("kill(" + pid + ", 0) downcall failed", t);
            }
            // 0: it exists; EPERM: it exists but belongs to another user; ESRCH: there is no such process.
            return rc == 0 || (int) ERRNO.get(callState, 0L) != ESRCH;
        }
        return handle.get().isAlive();
    }

    /** Whether {@code kill} is bound (else {@link ProcessHandle} answers). */
    static boolean usesKill() {
        return KILL != null;
    }
}
