package io.cuwire.transport.internal;

import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.HostBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Native memory through which a host frame that is not native memory crosses a channel. Such frames are Java
 * arrays' own segments ({@link HostBuffer#wrap}): the generic serializer hands primitive arrays over that way instead
 * of copying them. Neither channel can take them as they are: UCX needs an address, which a heap segment does not
 * have, and NIO needs a {@code ByteBuffer}, which the JDK offers only over a {@code byte[]} — and even for that one it
 * copies every byte still to write into a temporary native buffer of that size on each write call, so a large array
 * costs a copy of itself per partial write, in native memory as large as itself.
 *
 * <p>So the sender copies such a frame chunk by chunk into slots of this staging memory (through the
 * {@link CopyEngine}, counted host to host) and writes the slots from there — a socket several side by side in one
 * write: one copy of every byte, never a copy of the whole frame. The chunk, {@value #CHUNK_BYTES} bytes,
 * keeps a slot resident in the core's cache (L2 is 1–2 MiB on the hosts we run on; a few slots plus the socket's or
 * UCX's own working set fit) while the channel reads it again right after the copy wrote it, and still amortises the
 * per-chunk costs (a system call or a UCX request of a few microseconds) over the time a chunk takes on the channel
 * (~100 µs at 2–3 GB/s). A socket's receiver goes the other way for a frame it takes into a fresh array (its
 * descriptor names the array's type): it copies what each read brought out of its read buffer, never more than that
 * buffer holds.
 *
 * <p>The memory is allocated once per owner (a connection's writer) and reused; the garbage collector frees it with
 * its owner, so that a channel still reading a slot while its connection breaks never reads freed memory. Used by one
 * thread at a time.
 */
public final class HeapStaging {
    /** Bytes of one slot: the most a frame's chunk holds. */
    public static final int CHUNK_BYTES = 256 << 10;

    private static final long ALIGNMENT = 4096;

    private final MemorySegment memory;
    private final int slots;

    /** Allocates {@code slots} slots of {@link #CHUNK_BYTES}. */
    public HeapStaging(int slots) {
        if (slots <= 0) {
            throw new IllegalArgumentException("slots: " + slots + " (expected: > 0)");
        }
        this.slots = slots;
        this.memory = Arena.ofAuto().allocate((long) slots * CHUNK_BYTES, ALIGNMENT);
    }

    /** Whether {@code frame} must be staged: it is not native memory (a heap array's segment). */
    public static boolean needed(HostBuffer frame) {
        return !frame.segment().isNative();
    }

    /** Chunks of a frame of {@code length} bytes. */
    public static long chunks(long length) {
        return (length + CHUNK_BYTES - 1) / CHUNK_BYTES;
    }

    /** Number of slots. */
    public int slots() {
        return slots;
    }

    /** Bytes of all slots together. */
    public long capacity() {
        return memory.byteSize();
    }

    /** The memory, kept reachable by whoever hands its addresses to native code until that code is done. */
    public MemorySegment memory() {
        return memory;
    }

    /**
     * Copies chunk {@code k} of {@code src} into slot {@code slot}.
     *
     * @return the slot's bytes that now hold the chunk
     */
    public MemorySegment stageChunk(HostBuffer src, long k, int slot) {
        long offset = k * CHUNK_BYTES;
        return stage(src, offset, Math.min(CHUNK_BYTES, src.byteSize() - offset), (long) slot * CHUNK_BYTES);
    }

    /**
     * Copies {@code bytes} of {@code src} from {@code srcOffset} to offset {@code at} of the staging memory.
     *
     * @return the staging bytes that now hold them
     * @throws IndexOutOfBoundsException if the range lies outside {@code src} or the staging memory
     */
    public MemorySegment stage(HostBuffer src, long srcOffset, long bytes, long at) {
        MemorySegment target = memory.asSlice(at, bytes);
        CopyEngine.copyToSegment(src, srcOffset, target);
        return target;
    }
}
