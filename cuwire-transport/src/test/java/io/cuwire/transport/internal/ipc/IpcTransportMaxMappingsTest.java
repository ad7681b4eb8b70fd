package io.cuwire.transport.internal.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@value IpcTransport#MAX_MAPPINGS_PROPERTY}: the mappings each IPC connection's cache keeps. */
class IpcTransportMaxMappingsTest {
    @Test
    void shouldKeepEnoughMappingsForAModelOfTenThousandArraysUnlessTold() {
        assertEquals(IpcTransport.DEFAULT_MAX_MAPPINGS, IpcTransport.maxMappings(null));
        assertEquals(IpcTransport.DEFAULT_MAX_MAPPINGS, IpcTransport.maxMappings(" "));
        assertTrue(IpcTransport.DEFAULT_MAX_MAPPINGS >= 10_000);
        assertEquals(256, IpcTransport.maxMappings(" 256 "));
        assertEquals(1, IpcTransport.maxMappings("1"));
    }

    @Test
    void shouldRefuseAValueThatIsNotACountOfMappingsNamingTheProperty() {
        for (String bad : new String[] {"0", "-3", "many", "2097152"}) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> IpcTransport.maxMappings(bad));
            assertTrue(e.getMessage().startsWith("cuwire.ipc.maxMappings=" + bad), e.getMessage());
        }
    }
}
