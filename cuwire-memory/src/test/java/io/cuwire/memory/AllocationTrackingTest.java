package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class AllocationTrackingTest {
    @Test
    void shouldShowWhereLeakedBuffersWereAllocatedWhenTrackingIsOn() {
        String old = System.getProperty(BufferAllocator.TRACK_PROPERTY);
        System.setProperty(BufferAllocator.TRACK_PROPERTY, "true");
        BufferAllocator<HostBuffer> allocator;
        try {
            allocator = BufferAllocator.host("tracked", 1 << 20);
        } finally {
            if (old == null) {
                System.clearProperty(BufferAllocator.TRACK_PROPERTY);
            } else {
                System.setProperty(BufferAllocator.TRACK_PROPERTY, old);
            }
        }
        HostBuffer leaked = allocator.allocate(333);
        MemoryLeakException e = assertThrows(MemoryLeakException.class, allocator::close);
        assertTrue(
                e.getMessage().contains("AllocationTrackingTest.shouldShowWhereLeakedBuffersWereAllocated"),
                e.getMessage());
        assertTrue(e.getMessage().contains("333 bytes"), e.getMessage());
        assertTrue(
                e.getMessage().contains("recorded by -D" + BufferAllocator.TRACK_PROPERTY + "=true"),
                "the report names the property with stacks too: " + e.getMessage());
        leaked.close();
        assertEquals(0, allocator.allocatedBytes());
    }

    @Test
    void shouldNameOpenChildrenWhenAParentIsClosed() {
        BufferAllocator<HostBuffer> parent = BufferAllocator.host("parent", BufferAllocator.UNLIMITED);
        BufferAllocator<HostBuffer> child = parent.newChild("child", 100);
        MemoryLeakException e = assertThrows(MemoryLeakException.class, parent::close);
        assertTrue(e.getMessage().contains("'parent/child'"), e.getMessage());
        child.close();
        assertThrows(IllegalStateException.class, parent::close, "closing twice is an error");
        assertThrows(IllegalStateException.class, () -> parent.allocate(1));
    }

    @Test
    void shouldReportTheBuffersOfOpenChildrenAndTheTrackingPropertyWhenAParentIsClosed() {
        BufferAllocator<HostBuffer> parent = BufferAllocator.host("outer", BufferAllocator.UNLIMITED);
        BufferAllocator<HostBuffer> child = parent.newChild("inner", BufferAllocator.UNLIMITED);
        HostBuffer own = parent.allocate(1000);
        HostBuffer childs = child.allocate(4321);

        MemoryLeakException e = assertThrows(MemoryLeakException.class, parent::close);

        assertEquals(5321, e.leakedBytes());
        assertTrue(
                e.getMessage()
                        .startsWith("allocator 'outer' closed with 5321 bytes outstanding in 2 open buffer(s)"
                                + " and open child allocator(s) 'outer/inner' (4321 bytes)"),
                e.getMessage());
        assertTrue(e.getMessage().contains("\n  leaked HOST[1000 bytes]\n"), e.getMessage());
        assertTrue(e.getMessage().contains("\n  leaked HOST[4321 bytes] of 'outer/inner'\n"), e.getMessage());
        assertTrue(e.getMessage().contains("-D" + BufferAllocator.TRACK_PROPERTY + "=true"), e.getMessage());
        own.close();
        childs.close();
        child.close();
        assertEquals(0, parent.allocatedBytes());
    }

    @Test
    void shouldReturnReservedBytesWhenTheResourceFails() {
        MemoryResource<HostBuffer> failing = new MemoryResource<>() {
            @Override
            public MemoryKind kind() {
                return MemoryKind.HOST;
            }

            @Override
            public int deviceOrdinal() {
                return Buffer.HOST_ORDINAL;
            }

            @Override
            public HostBuffer allocate(long bytes) {
                throw new AllocationLimitException("no memory left for " + bytes + " bytes");
            }

            @Override
            public String describe() {
                return "failing";
            }
        };
        try (BufferAllocator<HostBuffer> allocator = BufferAllocator.root("failing", 1000, failing)) {
            assertThrows(AllocationLimitException.class, () -> allocator.allocate(10));
            assertEquals(0, allocator.allocatedBytes());
        }
    }
}
