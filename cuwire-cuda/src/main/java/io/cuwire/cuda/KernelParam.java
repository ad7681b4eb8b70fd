package io.cuwire.cuda;

/**
 * The C type of one kernel parameter, as {@code cuLaunchKernel} copies it: {@code int32_t}, {@code int64_t},
 * {@code float}, {@code double}, or a device pointer (64 bits; any element type, {@code const} or not).
 */
public enum KernelParam {
    /** {@code int32_t}. */
    I32(4),
    /** {@code int64_t}. */
    I64(8),
    /** {@code float}. */
    F32(4),
    /** {@code double}. */
    F64(8),
    /** A device pointer ({@code T*} or {@code const T*}). */
    PTR(8);

    private final int bytes;

    KernelParam(int bytes) {
        this.bytes = bytes;
    }

    /** The bytes of the C value. */
    public int byteSize() {
        return bytes;
    }
}
