package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Devices;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class WorkerCommandTest {
    @Test
    void shouldRefuseADeviceThisProcessLacksNamingTheDevicesItSees() {
        int visible = Devices.all().size();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            assertEquals(Main.USAGE, WorkerCommand.run(List.of("--device", String.valueOf(visible)), "00".repeat(16),
                    new ByteArrayInputStream(new byte[0]), System.out, e));
        }
        String text = err.toString(StandardCharsets.UTF_8);
        assertTrue(text.startsWith("cuwire worker: device " + visible + " is not visible to this process: it sees "
                + visible + " device(s) on platform " + Devices.platform()), text);
        assertTrue(!Devices.platform().equals("cuda") || text.contains("CUDA_VISIBLE_DEVICES"), text);
    }
}
