package io.cuwire.memory;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * A name by which another process on the same host maps a device buffer: a CUDA IPC memory handle, or the
 * shared-memory file of an emulated device, plus the buffer's offset and length within that allocation.
 * It is plain data and can be sent over any transport.
 *
 * @param platform the device platform that made it ({@code cuda}, {@code emulated})
 * @param deviceOrdinal the device holding the memory, in the exporting process's numbering
 * @param handle the platform's opaque handle bytes
 * @param offset the buffer's first byte within the exported allocation
 * @param length the buffer's length
 */
public record IpcHandle(String platform, int deviceOrdinal, byte[] handle, long offset, long length) {
    public IpcHandle {
        Objects.requireNonNull(platform, "platform");
        handle = handle.clone();
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException("offset: " + offset + ", length: " + length + " (expected: >= 0)");
        }
    }

    /**
     * Refuses this handle if its range ({@link #offset()}, {@link #length()}) does not lie within an allocation of
     * {@code allocationBytes}: what an importer checks against the size of the allocation the handle names, before it
     * maps any byte.
     *
     * @throws InvalidHandleException if {@code offset + length > allocationBytes}
     */
    public void checkWithin(long allocationBytes) {
        if (offset > allocationBytes || length > allocationBytes - offset) {
            throw new InvalidHandleException(this + " reaches byte " + Long.toUnsignedString(offset + length)
                    + " of an allocation of " + allocationBytes + " bytes (expected: offset + length <= "
                    + allocationBytes + ")");
        }
    }

    @Override
    public byte[] handle() {
        return handle.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcHandle h
                && platform.equals(h.platform)
                && deviceOrdinal == h.deviceOrdinal
                && Arrays.equals(handle, h.handle)
                && offset == h.offset
                && length == h.length;
    }

    @Override
    public int hashCode() {
        return Objects.hash(platform, deviceOrdinal, Arrays.hashCode(handle), offset, length);
    }

    @Override
    public String toString() {
        return "IpcHandle[" + platform + deviceOrdinal + ", "
                + HexFormat.of().formatHex(handle, 0, Math.min(handle.length, 16)) + (handle.length > 16 ? "…" : "")
                + ", offset " + offset + ", length "
                + length + "]";
    }
}
