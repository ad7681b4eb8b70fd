package io.cuwire.transport.spi;

import java.util.Objects;

/**
 * Whether a transport can run in this process, with the reason either way: what it runs over when it can
 * ({@code sockets}), what is missing and how to get it when it can't ({@code UCX not available: libucp.so.0 not
 * found; install libucx0 ...}).
 */
public record Availability(boolean available, String reason) {
    public Availability {
        Objects.requireNonNull(reason, "reason");
    }

    /** Available, running over {@code reason}. */
    public static Availability available(String reason) {
        return new Availability(true, reason);
    }

    /** Not available, because of {@code reason}. */
    public static Availability unavailable(String reason) {
        return new Availability(false, reason);
    }

    @Override
    public String toString() {
        return (available ? "available (" : "unavailable (") + reason + ")";
    }
}
