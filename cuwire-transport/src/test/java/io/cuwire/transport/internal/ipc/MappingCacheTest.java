package io.cuwire.transport.internal.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.IpcHandle;
import io.cuwire.serialize.Family;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.TransportException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The receiver's mapping cache over real exported allocations of this process's device (the emulated device maps
 * its own files; the opener also counts what it opened and what is still open). The allocations are larger than the
 * emulated device's slabbed sizes, so that each is an allocation of its own, as a CUDA pool block is.
 */
class MappingCacheTest {
    /** More than the emulated device serves from a shared slab. */
    private static final int LARGE = 2 << 20;

    private BufferAllocator<DeviceBuffer> exporter;
    private Device device;
    private final List<DeviceBuffer> opened = new ArrayList<>();

    @BeforeEach
    void open() {
        device = Devices.get(0);
        exporter = device.newAllocator("exporter", BufferAllocator.UNLIMITED);
    }

    @AfterEach
    void close() {
        exporter.close();
    }

    private MappingCache cache(int maxMappings, long maxBytes) {
        assumeTrue(
                device.platform().equals("emulated"),
                "CUDA does not open a process's own IPC handles; the cache"
                        + " runs on CUDA in IpcTransportTest, between two processes");
        return new MappingCache(
                "test mappings",
                (via, h) -> {
                    DeviceBuffer b = via.openHandle(h);
                    opened.add(b);
                    return b;
                },
                maxMappings,
                maxBytes);
    }

    private long openNow() {
        return opened.stream().filter(DeviceBuffer::isOpen).count();
    }

    private IpcHandle allocation(DeviceBuffer b) {
        return device.exportAllocation(b);
    }

    @Test
    void shouldOpenAnAllocationOnceAndReachEveryBufferInItByOffset() {
        try (DeviceBuffer a = exporter.allocate(LARGE);
                MappingCache cache = cache(4, 1 << 30)) {
            byte[] data = new byte[4096];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) i;
            }
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), a, 0);
            DeviceBuffer second = a.slice(1000, 96);
            assertEquals(1000, device.allocationOffset(second));
            assertEquals(allocation(a), allocation(second), "a slice is in the same allocation");
            try (MappingCache.Lease l1 = cache.acquire(allocation(a), 0, LARGE, device);
                    MappingCache.Lease l2 = cache.acquire(allocation(second), 1000, 96, device)) {
                byte[] got = new byte[96];
                CopyEngine.copyToSegment(l2.buffer(), 0, MemorySegment.ofArray(got));
                assertEquals(data[1000], got[0]);
                assertEquals(data[1095], got[95]);
                assertEquals(LARGE, l1.buffer().byteSize());
            }
            MappingCache.Stats s = cache.stats();
            assertEquals(1, s.opens());
            assertEquals(1, s.hits());
            assertEquals(1, s.mapped());
            assertEquals(LARGE, s.mappedBytes());
        }
        assertEquals(0, openNow(), "closing the cache closed the mapping");
    }

    @Test
    void shouldNameItsMappingsInTheMemoryReportOfTheDeviceTheyWereOpenedThrough() {
        try (DeviceBuffer a = exporter.allocate(LARGE);
                DeviceBuffer b = exporter.allocate(LARGE)) {
            MappingCache cache = cache(4, 1 << 30);
            assertTrue(mine(device).isEmpty(), "nothing mapped yet");
            try (MappingCache.Lease held = cache.acquire(allocation(a), 0, 16, device)) {
                cache.acquire(allocation(b), 0, 16, device).close();
                assertEquals(
                        List.of("test mappings: 2 mapping(s) of the peer's allocations, " + 2 * LARGE + " bytes "
                                + "(kept from being freed while mapped; 1 held by copies, the rest closed as the cache's "
                                + "bounds require)"),
                        mine(device));
                cache.close();
                assertEquals(
                        List.of("test mappings: 1 mapping(s) of the peer's allocations, " + LARGE + " bytes "
                                + "(kept from being freed while mapped; 1 held by copies, the rest closed as the cache's "
                                + "bounds require)"),
                        mine(device),
                        "off the report once closed, but for what a copy holds");
                assertTrue(held.buffer().isOpen());
            }
            assertTrue(mine(device).isEmpty());
        }
    }

    private static List<String> mine(Device d) {
        return d.memoryReport().holders().stream()
                .filter(h -> h.startsWith("test mappings"))
                .toList();
    }

    @Test
    void shouldEvictTheLeastRecentlyUsedMappingPastTheCountBound() {
        try (DeviceBuffer a = exporter.allocate(LARGE);
                DeviceBuffer b = exporter.allocate(LARGE);
                DeviceBuffer c = exporter.allocate(LARGE);
                MappingCache cache = cache(2, 1 << 30)) {
            cache.acquire(allocation(a), 0, 100, device).close();
            cache.acquire(allocation(b), 0, 100, device).close();
            cache.acquire(allocation(a), 0, 100, device).close();
            cache.acquire(allocation(c), 0, 100, device).close();
            MappingCache.Stats s = cache.stats();
            assertEquals(3, s.opens());
            assertEquals(1, s.evictions());
            assertEquals(2, s.mapped());
            cache.acquire(allocation(a), 0, 100, device).close();
            assertEquals(3, cache.stats().opens(), "a was used more recently than b, so b went");
            cache.acquire(allocation(b), 0, 100, device).close();
            assertEquals(4, cache.stats().opens());
            assertEquals(2, openNow());
        }
        assertEquals(0, openNow());
    }

    @Test
    void shouldCloseIdleMappingsAndRetryWhenThePlatformRefusesToOpenOneMore() {
        assumeTrue(device.platform().equals("emulated"), "CUDA does not open a process's own IPC handles");
        int[] platformBound = {2};
        try (DeviceBuffer a = exporter.allocate(LARGE);
                DeviceBuffer b = exporter.allocate(LARGE);
                DeviceBuffer c = exporter.allocate(LARGE);
                MappingCache cache = new MappingCache(
                        "test mappings",
                        (via, h) -> {
                            if (openNow() >= platformBound[0]) {
                                throw new AllocationLimitException("the platform maps at most " + platformBound[0]);
                            }
                            DeviceBuffer opened = via.openHandle(h);
                            this.opened.add(opened);
                            return opened;
                        },
                        100,
                        1L << 30)) {
            cache.acquire(allocation(a), 0, 100, device).close();
            try (MappingCache.Lease held = cache.acquire(allocation(b), 0, 100, device)) {
                assertEquals(100, held.buffer().byteSize());
                cache.acquire(allocation(c), 0, 100, device).close();
                MappingCache.Stats s = cache.stats();
                assertEquals(3, s.opens());
                assertEquals(1, s.evictions(), "a, idle, was closed to make room; b is held");
                assertEquals(2, openNow());
                platformBound[0] = 1;
                AllocationLimitException e = assertThrows(
                        AllocationLimitException.class, () -> cache.acquire(allocation(a), 0, 100, device));
                assertTrue(e.getMessage().contains("at most 1"), e.getMessage());
                assertEquals(1, openNow(), "c, idle, was closed; b stays held, and a was not opened");
            }
        }
        assertEquals(0, openNow());
    }

    @Test
    void shouldEvictPastTheByteBound() {
        try (DeviceBuffer a = exporter.allocate(LARGE);
                DeviceBuffer b = exporter.allocate(LARGE);
                MappingCache cache = cache(10, LARGE + LARGE / 2)) {
            cache.acquire(allocation(a), 0, 600, device).close();
            cache.acquire(allocation(b), 0, 600, device).close();
            MappingCache.Stats s = cache.stats();
            assertEquals(1, s.mapped());
            assertEquals(LARGE, s.mappedBytes());
            assertEquals(1, s.evictions());
            assertEquals(1, openNow());
        }
    }

    @Test
    void shouldNotCloseAMappingHeldByACopyUntilItIsReleased() {
        try (DeviceBuffer a = exporter.allocate(LARGE);
                DeviceBuffer b = exporter.allocate(LARGE);
                DeviceBuffer target = exporter.allocate(256);
                MappingCache cache = cache(1, 1 << 30)) {
            MappingCache.Lease held = cache.acquire(allocation(a), 0, 256, device);
            MappingCache.Lease other = cache.acquire(allocation(b), 0, 256, device);
            assertEquals(2, cache.stats().mapped(), "over the bound while both are held");
            CopyEngine.copy(held.buffer(), target);
            other.close();
            assertEquals(1, cache.stats().mapped(), "a is held, so b went when it came back");
            assertTrue(held.buffer().isOpen());
            held.close();
            assertEquals(1, cache.stats().mapped(), "a stays cached: the cache is within its bound again");
            assertEquals(1, cache.stats().evictions());
            assertThrows(IllegalStateException.class, held::close, "a lease is released once");
        }
        assertEquals(0, openNow());
    }

    @Test
    void shouldCloseAHeldMappingWhenItsLeaseComesBackAfterTheCacheClosed() {
        try (DeviceBuffer a = exporter.allocate(LARGE)) {
            MappingCache cache = cache(4, 1 << 30);
            MappingCache.Lease held = cache.acquire(allocation(a), 0, 256, device);
            cache.close();
            assertEquals(1, openNow(), "still held by a copy");
            assertEquals(1, cache.stats().mapped());
            held.close();
            assertEquals(0, openNow());
            MappingCache.Stats s = cache.stats();
            assertEquals(0, s.mapped());
            assertEquals(s.opens(), s.closes());
            assertThrows(IllegalStateException.class, () -> cache.acquire(allocation(a), 0, 256, device));
        }
    }

    @Test
    void shouldRefuseARangeOutsideTheAllocationBeforeOpening() {
        try (DeviceBuffer a = exporter.allocate(LARGE);
                MappingCache cache = cache(4, 1 << 30)) {
            assertThrows(IndexOutOfBoundsException.class, () -> cache.acquire(allocation(a), LARGE - 50, 100, device));
            assertEquals(0, cache.stats().opens());
        }
    }

    @Test
    void shouldSayWhenTheMappingsLeasesHoldReachItsBounds() {
        try (DeviceBuffer a = exporter.allocate(LARGE);
                DeviceBuffer b = exporter.allocate(LARGE);
                DeviceBuffer c = exporter.allocate(LARGE);
                MappingCache cache = cache(2, 1 << 30)) {
            MappingCache.Lease first = cache.acquire(allocation(a), 0, 10, device);
            MappingCache.Lease again = cache.acquire(allocation(a), 10, 10, device);
            assertTrue(!cache.heldAtBound(), "two leases of one mapping hold one mapping");
            MappingCache.Lease second = cache.acquire(allocation(b), 0, 10, device);
            assertTrue(cache.heldAtBound(), "two mappings held: one more would pass the bound");
            first.close();
            again.close();
            assertTrue(!cache.heldAtBound());
            cache.acquire(allocation(c), 0, 10, device).close();
            second.close();
            assertEquals(2, cache.stats().mapped());
        }
        try (DeviceBuffer a = exporter.allocate(LARGE);
                MappingCache cache = cache(8, LARGE)) {
            try (MappingCache.Lease held = cache.acquire(allocation(a), 0, 10, device)) {
                assertTrue(cache.heldAtBound(), "the byte bound is held");
                assertTrue(held.buffer().isOpen());
            }
        }
        assertEquals(0, openNow());
    }

    @Test
    void shouldRefuseIpcWithAPeerOnAnotherHostOrPlatformSayingWhy() {
        Capabilities local = Capabilities.local(List.of(Family.CUDA));
        Capabilities otherHost = new Capabilities(
                local.formatVersion(),
                local.pid() + 1,
                "elsewhere/boot",
                local.devices(),
                local.transports(),
                false,
                local.families());
        TransportException e =
                assertThrows(TransportException.class, () -> IpcConnection.checkUsable(otherHost, "peer"));
        assertTrue(e.getMessage().contains("runs on host 'elsewhere/boot'"), e.getMessage());
        Capabilities otherPlatform = new Capabilities(
                local.formatVersion(),
                local.pid() + 1,
                local.hostId(),
                List.of(new Capabilities.DeviceInfo("martian", 0, "x")),
                local.transports(),
                false,
                local.families());
        e = assertThrows(TransportException.class, () -> IpcConnection.checkUsable(otherPlatform, "peer"));
        assertTrue(e.getMessage().contains("[martian]"), e.getMessage());
        e = assertThrows(TransportException.class, () -> IpcConnection.checkUsable(local, "peer"));
        assertTrue(e.getMessage().contains("same process"), e.getMessage());
    }
}
