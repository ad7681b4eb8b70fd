package io.cuwire.cuda;

import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import java.util.Arrays;
import java.util.List;

/**
 * The arguments of one kernel launch on a CUDA {@link DeviceStream}, in the kernel's order, each with its C type: no
 * boxing, and device buffers checked as they are added (on the stream's device, large enough, aligned to their
 * elements), so a bad operand throws before anything is enqueued. A {@link Kernel} checks the types against its
 * signature at launch. Not thread-safe: build one per launch.
 */
public final class KernelArgs {
    private final CudaStream stream;
    private KernelParam[] kinds = new KernelParam[8];
    private long[] values = new long[8];
    private int size;

    private KernelArgs(CudaStream stream) {
        this.stream = stream;
    }

    /**
     * Empty arguments for a launch on {@code stream}.
     *
     * @throws IllegalArgumentException when {@code stream} is not a CUDA stream
     */
    public static KernelArgs on(DeviceStream stream) {
        return new KernelArgs(CudaStream.of(stream));
    }

    /** The stream of the launch. */
    public DeviceStream stream() {
        return stream;
    }

    /** Adds an {@code int32_t}. */
    public KernelArgs i32(int value) {
        return add(KernelParam.I32, value);
    }

    /** Adds an {@code int64_t}. */
    public KernelArgs i64(long value) {
        return add(KernelParam.I64, value);
    }

    /** Adds a {@code float}. */
    public KernelArgs f32(float value) {
        return add(KernelParam.F32, Float.floatToRawIntBits(value));
    }

    /** Adds a {@code double}. */
    public KernelArgs f64(double value) {
        return add(KernelParam.F64, Double.doubleToRawLongBits(value));
    }

    /**
     * Adds the device pointer of {@code buffer}'s first byte, after checking that it holds {@code elements} elements
     * of {@code elementSize} bytes on the stream's device, aligned to their size.
     *
     * @throws IllegalArgumentException when {@code elements} is negative, the buffer is on another device or is not
     *     aligned
     * @throws IndexOutOfBoundsException when the buffer is smaller than the elements
     */
    public KernelArgs array(String name, DeviceBuffer buffer, long elements, int elementSize) {
        return add(KernelParam.PTR, pointer(name, buffer, elements, elementSize));
    }

    /** {@link #array}, or a null pointer when {@code buffer} is {@code null} (an output the kernel skips). */
    public KernelArgs optionalArray(String name, DeviceBuffer buffer, long elements, int elementSize) {
        return buffer == null ? add(KernelParam.PTR, 0L) : array(name, buffer, elements, elementSize);
    }

    /** The C types added so far, in order. */
    public List<KernelParam> kinds() {
        return List.of(Arrays.copyOf(kinds, size));
    }

    /** The number of arguments added. */
    public int size() {
        return size;
    }

    /** The raw bits of argument {@code i} (for the launch). */
    long value(int i) {
        return values[i];
    }

    /** The C type of argument {@code i}. */
    KernelParam kind(int i) {
        return kinds[i];
    }

    CudaStream cudaStream() {
        return stream;
    }

    private KernelArgs add(KernelParam kind, long bits) {
        if (size == kinds.length) {
            kinds = Arrays.copyOf(kinds, size * 2);
            values = Arrays.copyOf(values, size * 2);
        }
        kinds[size] = kind;
        values[size] = bits;
        size++;
        return this;
    }

    private long pointer(String name, DeviceBuffer buffer, long n, int elementSize) {
        if (n < 0) {
            throw new IllegalArgumentException(name + " elements: " + n + " (expected: >= 0)");
        }
        CudaDevice device = stream.cudaDevice();
        if (buffer.device() != device) {
            throw new IllegalArgumentException(
                    name + ": " + buffer.describe() + " is not on " + device + ", the device of " + stream);
        }
        long bytes = Math.multiplyExact(n, (long) elementSize);
        if (bytes > buffer.byteSize()) {
            throw new IndexOutOfBoundsException(name + ": " + n + " elements of " + elementSize + " bytes need " + bytes
                    + " bytes (expected: <= " + name + ".byteSize() = " + buffer.byteSize() + ")");
        }
        long ptr = CudaDevice.pointer(buffer, 0);
        if (ptr % elementSize != 0) {
            throw new IllegalArgumentException(name + ": " + buffer.describe() + " starts at an address not aligned"
                    + " to its " + elementSize + "-byte elements");
        }
        return ptr;
    }
}
