package io.cuwire.memory;

/** The direction of a copy, as the {@link CopyEngine} counts it. */
public enum CopyDirection {
    /** Host or pinned memory to host or pinned memory. */
    H2H,
    /** Host or pinned memory to a device. */
    H2D,
    /** A device to host or pinned memory. */
    D2H,
    /** Within one device. */
    D2D,
    /** From one device to another device. */
    PEER;

    /** The direction of a copy from memory of kind {@code src} on {@code srcDevice} to {@code dst}. */
    public static CopyDirection of(MemoryKind src, int srcDevice, MemoryKind dst, int dstDevice) {
        boolean fromDevice = src == MemoryKind.DEVICE;
        boolean toDevice = dst == MemoryKind.DEVICE;
        if (fromDevice && toDevice) {
            return srcDevice == dstDevice ? D2D : PEER;
        }
        if (fromDevice) {
            return D2H;
        }
        return toDevice ? H2D : H2H;
    }
}
