package io.cuwire.bench.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.transport.Transports;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The cost of connections that never authenticate, small: the listener holds every idle one in its handshake (the
 * run waits for its {@code handshaking()} count to reach them, else fails) and refuses every churning one.
 */
class UnauthenticatedConnectionsBenchTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldHoldEveryIdleConnectionInItsHandshakeAndReportItsCost() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        UnauthenticatedConnectionsBench.Result r = UnauthenticatedConnectionsBench.run(
                "idle", 40, Transports.TCP, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(40, r.connections());
        assertTrue(out.contains("idle: 40 connections"), out);
        assertTrue(out.contains("per connection: RSS"), out);
        assertTrue(r.after().platformThreads() > 0 && r.before().rssBytes() > 0, out);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldRefuseEveryChurningConnection() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        UnauthenticatedConnectionsBench.run(
                "churn", 40, Transports.TCP, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("churn: 40 connections"));
    }

    @Test
    void shouldRefuseAModeItDoesNotKnow() {
        assertThrows(
                IllegalArgumentException.class,
                () -> UnauthenticatedConnectionsBench.run("storm", 1, Transports.TCP, System.out));
    }
}
