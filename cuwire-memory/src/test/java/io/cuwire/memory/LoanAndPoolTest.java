package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Loans of a buffer's memory and the pool of touched host memory. */
class LoanAndPoolTest {
    @Test
    void shouldLendDeviceMemoryWithoutCopyingAndReportTheReturnOnce() {
        Device device = Devices.get(0);
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("loan", BufferAllocator.UNLIMITED);
                DeviceBuffer whole = alloc.allocate(4096)) {
            DeviceBuffer part = whole.slice(1024, 16);
            CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[] {1, 2, 3}), part, 0);
            AtomicInteger returned = new AtomicInteger();
            TransferStats before = CopyEngine.totals();
            DeviceBuffer loan = part.lend(returned::incrementAndGet);
            assertEquals(0, CopyEngine.totals().minus(before).totalBytes(), "a loan copies nothing");
            assertNull(loan.allocator());
            assertEquals(16, loan.byteSize());
            byte[] back = new byte[3];
            CopyEngine.copyToSegment(loan, 0, MemorySegment.ofArray(back));
            assertEquals(3, back[2]);
            loan.close();
            assertEquals(1, returned.get());
            assertThrows(IllegalStateException.class, loan::close);
            assertEquals(1, returned.get());
            assertTrue(whole.isOpen(), "returning a loan frees nothing");
            assertEquals(4096, alloc.allocatedBytes());
        }
    }

    @Test
    void shouldReportALoanClosedOnceItsLenderIsClosed() {
        BufferAllocator<HostBuffer> alloc = BufferAllocator.host("loan-host", BufferAllocator.UNLIMITED);
        HostBuffer lender = alloc.allocate(64);
        HostBuffer loan = lender.lend(Buffer.Releaser.NONE);
        lender.close();
        assertFalse(loan.isOpen());
        assertThrows(IllegalStateException.class, loan::segment);
        alloc.close();
    }

    @Test
    void shouldHandOutReturnedHostBlocksAgain() {
        try (HostMemoryPool pool = new HostMemoryPool(HostMemory.resource(), 1 << 20)) {
            BufferAllocator<HostBuffer> alloc = BufferAllocator.root("pooled", BufferAllocator.UNLIMITED, pool);
            HostBuffer first = alloc.allocate(1000);
            long address = first.segment().address();
            first.close();
            assertEquals(1000, pool.cachedBytes());
            HostBuffer second = alloc.allocate(900);
            assertEquals(address, second.segment().address(), "the cached block is reused");
            assertEquals(900, second.byteSize());
            assertEquals(0, pool.cachedBytes());
            HostBuffer big = alloc.allocate(4000);
            assertTrue(big.segment().address() != address);
            second.close();
            big.close();
            alloc.close();
            assertEquals(5000, pool.cachedBytes(), "whole blocks are cached");
        }
    }
}
