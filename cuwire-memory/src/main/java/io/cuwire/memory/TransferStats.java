package io.cuwire.memory;

import java.util.Arrays;

/**
 * Bytes and copy counts per {@link CopyDirection}: a snapshot of the {@link CopyEngine}'s counters, or of one
 * {@link TransferScope}.
 */
public final class TransferStats {
    private static final CopyDirection[] DIRECTIONS = CopyDirection.values();

    private final long[] bytes;
    private final long[] copies;

    TransferStats(long[] bytes, long[] copies) {
        this.bytes = bytes.clone();
        this.copies = copies.clone();
    }

    /** Bytes copied in {@code direction}. */
    public long bytes(CopyDirection direction) {
        return bytes[direction.ordinal()];
    }

    /** Copies made in {@code direction}. */
    public long copies(CopyDirection direction) {
        return copies[direction.ordinal()];
    }

    /** Bytes that crossed between host and device either way: {@code H2D + D2H}. */
    public long hostDeviceBytes() {
        return bytes(CopyDirection.H2D) + bytes(CopyDirection.D2H);
    }

    /** Bytes in every direction. */
    public long totalBytes() {
        return Arrays.stream(bytes).sum();
    }

    /** What happened between {@code earlier} and this snapshot. */
    public TransferStats minus(TransferStats earlier) {
        long[] b = new long[DIRECTIONS.length];
        long[] c = new long[DIRECTIONS.length];
        for (int i = 0; i < b.length; i++) {
            b[i] = bytes[i] - earlier.bytes[i];
            c[i] = copies[i] - earlier.copies[i];
        }
        return new TransferStats(b, c);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TransferStats t && Arrays.equals(bytes, t.bytes) && Arrays.equals(copies, t.copies);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(bytes) + Arrays.hashCode(copies);
    }

    /** E.g. {@code H2H=0 H2D=4096(1) D2H=0 D2D=0 PEER=0}: bytes with the number of copies in brackets. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        for (CopyDirection d : DIRECTIONS) {
            if (!sb.isEmpty()) {
                sb.append(' ');
            }
            sb.append(d).append('=').append(bytes[d.ordinal()]);
            if (copies[d.ordinal()] > 0) {
                sb.append('(').append(copies[d.ordinal()]).append(')');
            }
        }
        return sb.toString();
    }
}
