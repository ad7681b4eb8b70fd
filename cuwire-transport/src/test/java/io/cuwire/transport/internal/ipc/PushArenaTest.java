package io.cuwire.transport.internal.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.transport.ProtocolViolationException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The two halves of the IPC push arena on their own: the accepting side's loans (what a peer may push where) and the
 * dialling side's ranges (what it may push into), over an allocation of this process's device.
 */
class PushArenaTest {
    private static final long ARENA = 64 << 10;

    @Test
    void shouldLendPushedBytesAndRefuseRangesOutsideTheArenaOrOverlappingHeldOnes() {
        BufferAllocator<DeviceBuffer> owner = Devices.get(0).newAllocator("arena", ARENA);
        BufferAllocator<DeviceBuffer> frames = Devices.get(0).newAllocator("frames", BufferAllocator.UNLIMITED);
        List<String> returns = new ArrayList<>();
        ReceiveArena arena = new ReceiveArena(owner.allocate(ARENA), owner, frames, () -> returns.add("returned"));
        DeviceBuffer a = arena.lend(0, 1000);
        DeviceBuffer b = arena.lend(1024, 4096);
        assertEquals(1000, a.byteSize());
        assertSame(frames, a.allocator(), "a loan names the allocator the receiver's frames come from");
        assertEquals(0, frames.allocatedBytes(), "without counting its bytes there");
        assertEquals(1024, b.rootOffset() - a.rootOffset());
        assertThrows(IllegalArgumentException.class, () -> arena.lend(512, 256), "inside a held range");
        assertThrows(IllegalArgumentException.class, () -> arena.lend(4096, 4096), "overlapping the next one's end");
        assertThrows(IllegalArgumentException.class, () -> arena.lend(900, 200), "overlapping the first one's end");
        IllegalArgumentException outside =
                assertThrows(IllegalArgumentException.class, () -> arena.lend(ARENA - 8, 16));
        assertTrue(outside.getMessage().contains("not within the push arena of 65536 bytes"), outside.getMessage());
        assertThrows(IllegalArgumentException.class, () -> arena.lend(-256, 16));
        assertThrows(IllegalArgumentException.class, () -> arena.lend(Long.MAX_VALUE - 4, 16), "no overflow");
        assertFalse(arena.hasReturned());
        a.close();
        assertEquals(List.of("returned"), returns);
        List<long[]> back = arena.drainReturned();
        assertEquals(1, back.size());
        assertEquals(0, back.getFirst()[0]);
        assertEquals(1000, back.getFirst()[1]);
        assertTrue(arena.drainReturned().isEmpty());
        DeviceBuffer again = arena.lend(512, 256); // returned bytes may be pushed into again
        arena.end();
        assertEquals(ARENA, owner.allocatedBytes(), "the arena stays while loans are out");
        assertTrue(b.isOpen());
        again.close();
        b.close();
        assertEquals(0, owner.allocatedBytes(), "freed with the last loan");
        assertThrows(IllegalStateException.class, () -> owner.allocate(16), "its allocator closed with it");
        assertEquals(0, frames.allocatedBytes());
        frames.close();
    }

    @Test
    void shouldReserveAlignedRangesUntilFullAndTakeBackOnlyWhatItReserved() {
        // a buffer that is an allocation of its own (the emulated device serves small ones from shared slabs, a CUDA
        // pool may hand out a block larger than asked), so that the loan standing for its mapping covers it whole
        try (BufferAllocator<DeviceBuffer> exporter = Devices.get(0).newAllocator("exp", BufferAllocator.UNLIMITED);
                DeviceBuffer memory = ownAllocation(exporter);
                // the "mapping" is a loan of the memory itself: CUDA does not open a process's own handles
                MappingCache cache = new MappingCache("test", (d, h) -> memory.lend(() -> {}), 4, 1L << 30)) {
            MappingCache.Lease lease = cache.acquire(
                    Devices.get(0).exportAllocation(memory),
                    Devices.get(0).allocationOffset(memory),
                    ARENA,
                    Devices.get(0));
            try (PushArena arena = new PushArena(lease, Devices.get(0))) {
                List<Long> offsets = new ArrayList<>();
                long offset;
                while ((offset = arena.reserve(10_000)) >= 0) {
                    offsets.add(offset);
                }
                // 10,000 bytes take 10,240 (aligned to 256): six fit in 64 KiB
                assertEquals(List.of(0L, 10_240L, 20_480L, 30_720L, 40_960L, 51_200L), offsets);
                assertEquals(61_440, arena.reserve(4096), "the last 4 KiB");
                assertEquals(-1, arena.reserve(1));
                assertThrows(
                        ProtocolViolationException.class, () -> arena.release(256, 10, "peer"), "never reserved there");
                assertThrows(
                        ProtocolViolationException.class,
                        () -> arena.release(0, 20_000, "peer"),
                        "longer than reserved");
                arena.release(10_240, 10_000, "peer");
                arena.release(20_480, 10_000, "peer");
                assertThrows(
                        ProtocolViolationException.class,
                        () -> arena.release(20_480, 10_000, "peer"),
                        "returned twice");
                assertEquals(10_240, arena.reserve(20_000), "the two freed ranges coalesced");
                assertEquals(30_464, arena.reserve(1), "20,000 bytes took 20,224: 256 are left of the 20,480");
                assertEquals(-1, arena.reserve(1));
                assertEquals(20_000, arena.target(10_240, 20_000).byteSize());
            }
        }
    }

    /** A buffer of at least {@link #ARENA} bytes that is a whole allocation of {@code exporter}'s device. */
    private static DeviceBuffer ownAllocation(BufferAllocator<DeviceBuffer> exporter) {
        for (long size = ARENA; size <= 256L << 20; size *= 4) {
            DeviceBuffer b = exporter.allocate(size);
            if (Devices.get(0).allocationOffset(b) == 0
                    && Devices.get(0).exportAllocation(b).length() == size) {
                return b;
            }
            b.close();
        }
        throw new AssertionError("no allocation of its own up to 256 MiB on " + Devices.get(0));
    }
}
