package io.cuwire.bench.harness;

import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * The cluster secret of one benchmark run: 32 random bytes made per run, never written into the code. A child JVM
 * gets it in the environment variable {@value #VARIABLE} as hex (never on its command line, which other users of
 * the host can read), as {@code cuwire worker} does.
 */
public final class Secrets {
    /** The environment variable that carries a run's secret to its child JVMs, as hex. */
    public static final String VARIABLE = "CUWIRE_SECRET";

    private static final SecureRandom RANDOM = new SecureRandom();

    private Secrets() {}

    /** A fresh secret of 32 random bytes. */
    public static byte[] generate() {
        byte[] secret = new byte[32];
        RANDOM.nextBytes(secret);
        return secret;
    }

    /** {@code secret} as hex, for {@link #VARIABLE}. */
    public static String hex(byte[] secret) {
        return HexFormat.of().formatHex(secret);
    }

    /**
     * The secret a parent passed in {@link #VARIABLE}.
     *
     * @throws IllegalStateException naming the variable when it is unset or not hex of at least 16 bytes
     */
    public static byte[] fromEnvironment() {
        String hex = System.getenv(VARIABLE);
        if (hex == null || hex.isBlank()) {
            throw new IllegalStateException(
                    VARIABLE + " is not set: a benchmark's child JVM gets its run's secret " + "there from the parent");
        }
        byte[] secret;
        try {
            secret = HexFormat.of().parseHex(hex.strip());
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(VARIABLE + " is not hex: " + e.getMessage(), e);
        }
        if (secret.length < 16) {
            throw new IllegalStateException(VARIABLE + " holds " + secret.length + " bytes (expected: at least 16)");
        }
        return secret;
    }
}
