package io.cuwire.bench.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TimelineReportTest {
    @TempDir
    Path dir;

    /**
     * Two processes ping-ponging: the client (pid 20, whose file sorts second but which sends first) sends at 100 µs
     * steps; the server reads 10 µs after each send and replies 30 µs after it; every fourth round the server's read
     * comes 20 µs later (another sequence of the same stamps' gaps, same labels).
     */
    @Test
    void shouldNameTheFirstSenderAAndGiveTheMedianGapsOfTheCommonestRound() throws IOException {
        StringBuilder client = new StringBuilder("# 20 java client\n");
        StringBuilder server = new StringBuilder("# 10 java --serve\n");
        server.append(500).append("\tRECEIVE_CALLED\n"); // the server stamps first, yet A is the client
        for (int r = 0; r < 12; r++) {
            long t = 1_000_000 + r * 100_000L;
            long late = r % 4 == 3 ? 20_000 : 0;
            client.append(t).append("\tSEND_CALLED\n");
            server.append(t + 10_000 + late).append("\tREAD_QUEUED\n");
            server.append(t + 30_000 + late).append("\tSEND_CALLED\n");
            client.append(t + 60_000 + late).append("\tRECEIVE_RETURNED\n");
        }
        Files.writeString(dir.resolve("timeline-20.tsv"), client);
        Files.writeString(dir.resolve("timeline-10.tsv"), server);
        Files.writeString(dir.resolve("other.txt"), "not a timeline");

        TimelineReport.Report report = TimelineReport.analyse(dir, 8);

        assertEquals(List.of("A = 20 java client", "B = 10 java --serve"), report.processes());
        assertEquals(8, report.rounds());
        assertEquals(100.0, report.medianRoundMicros(), 1e-9);
        assertEquals(
                List.of("A:SEND_CALLED", "B:READ_QUEUED", "B:SEND_CALLED", "A:RECEIVE_RETURNED"),
                report.steps().stream().map(TimelineReport.Step::label).toList());
        // rounds 2..9 of 0..11 (the last but one excluded); 2 of the 8 are late, the median is the on-time gap
        assertEquals(8, report.typical());
        assertEquals(10.0, report.steps().get(1).gapMicros(), 1e-9);
        assertEquals(60.0, report.steps().get(3).atMicros(), 1e-9);
        TimelineReport.Transition longest = report.transitions().getFirst();
        assertEquals("A:RECEIVE_RETURNED", longest.from());
        assertEquals("A:SEND_CALLED", longest.to());
        assertEquals(1.0, longest.perRound(), 1e-9);
        assertEquals(40.0, longest.gapMicros(), 1e-9);
        double shares = report.transitions().stream()
                .mapToDouble(TimelineReport.Transition::share)
                .sum();
        assertEquals(1.0, shares, 1e-9);

        // the 4 rounds before the last 5 sends: rounds 2..5, of which round 3 is late (its gap is not the median)
        TimelineReport.Report earlier = TimelineReport.analyse(dir, 4, 5);
        assertEquals(4, earlier.rounds());
        assertEquals(4, earlier.typical()); // the late round has the same stamps, so the same sequence
        assertEquals(10.0, earlier.steps().get(1).gapMicros(), 1e-9);
        assertThrows(IllegalArgumentException.class, () -> TimelineReport.analyse(dir, 8, 5));
    }

    @Test
    void shouldSayHowManyFilesItFoundAndHowManyRoundsTheyHold() throws IOException {
        Files.writeString(dir.resolve("timeline-1.tsv"), "# 1 x\n5\tSEND_CALLED\n");
        IllegalArgumentException one =
                assertThrows(IllegalArgumentException.class, () -> TimelineReport.analyse(dir, 10));
        assertTrue(one.getMessage().contains("holds 1 timeline files"), one.getMessage());
        Files.writeString(dir.resolve("timeline-2.tsv"), "# 2 y\n7\tREAD_QUEUED\n");
        IllegalArgumentException few =
                assertThrows(IllegalArgumentException.class, () -> TimelineReport.analyse(dir, 10));
        assertTrue(few.getMessage().contains("hold 0 complete rounds"), few.getMessage());
        assertThrows(IllegalArgumentException.class, () -> TimelineReport.analyse(dir, 1, 0));
    }
}
