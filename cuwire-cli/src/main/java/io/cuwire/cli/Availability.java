package io.cuwire.cli;

/** Whether something (a transport, a native library) can be used on this machine, and why. */
public record Availability(boolean available, String reason) {
    public static Availability available(String reason) {
        return new Availability(true, reason);
    }

    public static Availability unavailable(String reason) {
        return new Availability(false, reason);
    }

    @Override
    public String toString() {
        return (available ? "available" : "unavailable") + " (" + reason + ")";
    }
}
