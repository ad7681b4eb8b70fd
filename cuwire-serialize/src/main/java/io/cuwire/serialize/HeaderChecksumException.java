package io.cuwire.serialize;

import java.util.Locale;

/**
 * Header bytes that do not match the checksum they carry: corrupted on the way or in storage. Found before any of
 * them was parsed.
 */
public class HeaderChecksumException extends MalformedHeaderException {
    private static final long serialVersionUID = 1L;

    private final long expected;
    private final long actual;

    /**
     * A mismatch.
     *
     * @param expected the CRC32C the header carries
     * @param actual the CRC32C of the bytes it covers
     * @param headerBytes the header's length
     */
    public HeaderChecksumException(long expected, long actual, int headerBytes) {
        super(String.format(
                Locale.ROOT,
                "header checksum mismatch: the header of %d bytes carries CRC32C 0x%08x, " + "its bytes give 0x%08x",
                headerBytes,
                expected,
                actual));
        this.expected = expected;
        this.actual = actual;
    }

    /** The CRC32C the header carries. */
    public long expected() {
        return expected;
    }

    /** The CRC32C of the bytes it covers. */
    public long actual() {
        return actual;
    }
}
