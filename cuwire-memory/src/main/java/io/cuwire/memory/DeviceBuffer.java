package io.cuwire.memory;

import io.cuwire.memory.spi.DeviceAllocation;
import java.util.Objects;

/**
 * Memory of one {@link Device}. The host cannot read or write it: bytes move in and out through the
 * {@link CopyEngine} only, which counts them.
 */
public final class DeviceBuffer extends Buffer {
    private final Device device;
    private final DeviceAllocation allocation;

    private DeviceBuffer(Device device, DeviceAllocation allocation, long byteSize, Releaser releaser) {
        super(MemoryKind.DEVICE, byteSize, releaser);
        this.device = device;
        this.allocation = allocation;
    }

    private DeviceBuffer(DeviceBuffer parent, long offset, long length) {
        super(parent, offset, length);
        this.device = parent.device;
        this.allocation = parent.allocation;
    }

    private DeviceBuffer(DeviceBuffer lender, Releaser onReturn, BufferAllocator<DeviceBuffer> lentFor) {
        super(lender, onReturn, lentFor);
        this.device = lender.device;
        this.allocation = lender.allocation;
    }

    /**
     * A buffer over {@code allocation}, which {@code releaser} frees (or unmaps) on close. For device platforms
     * only: users get device buffers from a {@link BufferAllocator} or {@link Device#openHandle}.
     */
    public static DeviceBuffer owning(Device device, DeviceAllocation allocation, long byteSize, Releaser releaser) {
        return new DeviceBuffer(
                Objects.requireNonNull(device, "device"),
                Objects.requireNonNull(allocation, "allocation"),
                byteSize,
                Objects.requireNonNull(releaser, "releaser"));
    }

    /** The device holding the memory. */
    public Device device() {
        return device;
    }

    @Override
    public int deviceOrdinal() {
        return device.ordinal();
    }

    /**
     * The platform's record of the memory, for that platform's code only; this buffer starts at
     * {@link #rootOffset()} within it.
     *
     * @throws CopyException if the memory belongs to another platform than {@code type}
     */
    public <T extends DeviceAllocation> T allocation(Class<T> type) {
        checkOpen();
        if (!type.isInstance(allocation)) {
            throw new CopyException(
                    describe() + " belongs to platform '" + device.platform() + "', not to " + type.getSimpleName());
        }
        return type.cast(allocation);
    }

    @Override
    public DeviceBuffer slice(long offset, long length) {
        checkSlice(offset, length);
        return new DeviceBuffer(this, offset, length);
    }

    @Override
    public DeviceBuffer lend(Releaser onReturn) {
        checkOpen();
        return new DeviceBuffer(this, onReturn, null);
    }

    /**
     * As {@link #lend(Releaser)}, the loan reporting {@code lentFor} as its {@link #allocator()}: the allocator its
     * borrower takes more memory of this device from, as it would for a buffer that allocator made (a transport lends
     * received bytes of its own memory this way, naming the allocator the receiver's frames come from). The loan's
     * bytes are not counted there, and closing it returns nothing to it.
     */
    public DeviceBuffer lend(Releaser onReturn, BufferAllocator<DeviceBuffer> lentFor) {
        checkOpen();
        return new DeviceBuffer(this, onReturn, Objects.requireNonNull(lentFor, "lentFor"));
    }

    @Override
    public String describe() {
        return "DEVICE:" + device.platform() + device.ordinal() + "[" + byteSize() + " bytes]";
    }
}
