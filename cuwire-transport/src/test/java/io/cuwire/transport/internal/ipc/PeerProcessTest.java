package io.cuwire.transport.internal.ipc;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class PeerProcessTest {
    @Test
    void shouldAskTheKernelWhetherAProcessLives() throws Exception {
        assertTrue(PeerProcess.usesKill(), "libc's kill binds on Linux");
        assertTrue(new PeerProcess(ProcessHandle.current().pid()).isAlive());

        Process child = new ProcessBuilder("sleep", "30").start();
        PeerProcess peer = new PeerProcess(child.pid());
        assertTrue(peer.isAlive());
        child.destroyForcibly();
        assertTrue(child.waitFor(10, TimeUnit.SECONDS));
        assertFalse(peer.isAlive(), "a process that exited and was reaped is gone");
    }

    @Test
    void shouldTakeAPeerItCannotSeeAsAlive() {
        // A pid that names no process of this namespace when the connection is made (another pid namespace).
        long unused = 4_194_304L + 17;
        assertTrue(ProcessHandle.of(unused).isEmpty());
        assertTrue(new PeerProcess(unused).isAlive());
    }
}
