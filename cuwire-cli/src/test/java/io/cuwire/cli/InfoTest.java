package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.transport.spi.Availability;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InfoTest {
    @Test
    void shouldFormatBytesInBinaryUnitsWithOneDecimal() {
        assertEquals("0 B", Info.bytes(0));
        assertEquals("1023 B", Info.bytes(1023));
        assertEquals("1.0 KiB", Info.bytes(1024));
        assertEquals("1.5 MiB", Info.bytes(3L << 19));
        assertEquals("24.0 GiB", Info.bytes(24L << 30));
        assertEquals("8.0 EiB", Info.bytes(Long.MAX_VALUE));
    }

    @Test
    void shouldNameEachPassedOverPlatformWithItsReason() {
        assertEquals("none", Info.passedOver(Map.of()));
        Map<String, String> passed = new LinkedHashMap<>();
        passed.put("cuda", "libcuda.so.1 not found");
        passed.put("other", "no devices");
        assertEquals("cuda (libcuda.so.1 not found), other (no devices)", Info.passedOver(passed));
    }

    @Test
    void shouldFindLibcAndNotAMissingLibrary() {
        assertTrue(NativeLibraries.probe("libc.so.6").available());
        Availability missing = NativeLibraries.probe("libcuwire-does-not-exist.so.0");
        assertFalse(missing.available());
        assertTrue(missing.reason().startsWith("libcuwire-does-not-exist.so.0 not found"), missing.reason());
    }

    @Test
    void shouldOfferIpcOnCudaAndEmulatedOnly() {
        assertTrue(Transports.ipc("cuda").available());
        assertEquals(
                "emulated shared-memory handles", Transports.ipc("emulated").reason());
        assertFalse(Transports.ipc("other").available());
    }

    @Test
    void shouldExplainHowToGetUcxWhenItIsMissing() {
        Availability ucx = Transports.ucx();
        assertTrue(ucx.available() || ucx.reason().contains("libucx0"), ucx.toString());
    }

    @Test
    void shouldNameTheLoadedUcxItsModulesAndWhetherItCarriesCuda() {
        Availability ucx = Transports.ucx();
        assumeTrue(ucx.available(), () -> "UCX does not load here: " + ucx.reason());
        assertTrue(
                ucx.reason()
                        .matches("UCX \\d+\\.\\d+\\.\\d+.* \\(/.*libucp\\.so[.0-9]*\\), modules in /.*: .*; "
                                + "CUDA memory: (yes|no) .*"),
                ucx.reason());
    }
}
