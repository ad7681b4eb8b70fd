package io.cuwire.cli;

import static io.cuwire.cli.Tables.row;
import static io.cuwire.cli.Tables.spread;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cli.DemoResults.Row;
import java.util.List;
import org.junit.jupiter.api.Test;

class VerdictTest {
    private static final long BIG = 64L << 20;
    private static final String NN = "NearestNeighbors";

    @Test
    void shouldNameTheFastestCudaPathAndTheJavaOverTcpBaselineWhenCudaIsAhead() {
        List<Row> rows = List.of(
                row(NN, "tcp", "cuda", BIG, 90, 4 * BIG, 5),
                row(NN, "tcp", "host", BIG, 150, 3 * BIG, 5),
                row(NN, "tcp", "java", BIG, 400, 3 * BIG, 5),
                row(NN, "ipc", "cuda", BIG, 40, 0, 5),
                row(NN, "ipc", "host", BIG, 80, 3 * BIG, 5),
                row(NN, "ipc", "java", BIG, 200, 3 * BIG, 5));
        Verdict v = Verdict.of(NN, rows);
        assertTrue(v.cudaAhead(), v.text());
        assertEquals(
                "NearestNeighbors (64.0 MiB): cuda over ipc: 40.0 ms, 0 B through host; java over tcp: 400 ms "
                        + "(10.0 × slower); fastest other path, host over ipc: 80.0 ms (2.0 × slower).",
                v.text());
    }

    @Test
    void shouldSayWhenTheLeadIsWithinTheRunToRunSpread() {
        List<Row> rows = List.of(
                spread(NN, "ipc", "cuda", BIG, 40, 30, 90, 0, 5),
                spread(NN, "ipc", "host", BIG, 50, 45, 60, 3 * BIG, 5),
                spread(NN, "tcp", "java", BIG, 400, 390, 410, 3 * BIG, 5));
        Verdict v = Verdict.of(NN, rows);
        assertTrue(v.cudaAhead(), v.text());
        assertTrue(
                v.text()
                        .endsWith(
                                "fastest other path, host over ipc: 50.0 ms (1.3 × slower), but within the "
                                        + "run-to-run spread of the two (cuda over ipc 30.0–90.0 ms against host over ipc 45.0–60.0 ms)."),
                v.text());
    }

    @Test
    void shouldSayCudaIsNotAheadOnASmallModelAndWhyFromTheNumbers() {
        List<Row> rows = List.of(
                spread("LinearRegression", "tcp", "cuda", 64, 9, 8, 12, 256, 5),
                spread("LinearRegression", "tcp", "host", 64, 2, 1.5, 4, 192, 5),
                spread("LinearRegression", "tcp", "java", 64, 6, 5, 7, 192, 5));
        Verdict v = Verdict.of("LinearRegression", rows);
        assertFalse(v.cudaAhead(), v.text());
        assertEquals(
                "LinearRegression (64 B): cuda is not ahead: host over tcp took 2.00 ms, the fastest cuda path "
                        + "(cuda over tcp: 9.00 ms, 256 B through host) 4.5 × that. Why: the model is 64 B, too small for its "
                        + "bytes to matter: every path took 2.00 to 9.00 ms, the cost of a broadcast's messages and decoding, "
                        + "not of copies; no transport measured here kept the device frames off the host: cuda over tcp moved "
                        + "256 B through host, host over tcp 192 B.",
                v.text());
    }

    @Test
    void shouldBlameTheStagingWhenNoTransportKeptDeviceFramesOffTheHost() {
        List<Row> rows = List.of(
                row(NN, "tcp", "cuda", BIG, 120, 4 * BIG, 5),
                row(NN, "tcp", "host", BIG, 100, 3 * BIG, 5),
                row(NN, "tcp", "java", BIG, 300, 3 * BIG, 5));
        Verdict v = Verdict.of(NN, rows);
        assertFalse(v.cudaAhead(), v.text());
        assertTrue(
                v.text()
                        .contains("Why: no transport measured here kept the device frames off the host: cuda over "
                                + "tcp moved 256.0 MiB through host, host over tcp 192.0 MiB."),
                v.text());
        assertFalse(v.text().contains("too small"), v.text());
    }

    @Test
    void shouldSayTheSlowerZeroCopyPathIsUnexplainedByHostCopiesWhenOutsideTheSpread() {
        List<Row> rows = List.of(row(NN, "ipc", "cuda", BIG, 120, 0, 5), row(NN, "ipc", "host", BIG, 100, 3 * BIG, 5));
        Verdict v = Verdict.of(NN, rows);
        assertFalse(v.cudaAhead(), v.text());
        assertTrue(
                v.text()
                        .contains("Why: cuda over ipc moved 0 B through host against 192.0 MiB yet took longer, "
                                + "outside the run-to-run spread, so the cost is not a host copy"),
                v.text());
    }

    @Test
    void shouldCountATieAsNotAheadAndTheOverlapAsTheReason() {
        List<Row> rows = List.of(
                spread(NN, "ipc", "cuda", BIG, 100, 90, 110, 0, 5),
                spread(NN, "ipc", "host", BIG, 100, 95, 105, 3 * BIG, 5));
        Verdict v = Verdict.of(NN, rows);
        assertFalse(v.cudaAhead(), v.text());
        assertTrue(
                v.text()
                        .contains("1.0 × that. Why: the two are within their run-to-run spread (cuda over ipc "
                                + "90.0–110 ms against host over ipc 95.0–105 ms)."),
                v.text());
    }

    @Test
    void shouldTakeTheSlowestOtherPathAsBaselineWithoutJavaOverTcp() {
        List<Row> rows = List.of(
                row(NN, "ipc", "cuda", BIG, 40, 0, 5),
                row(NN, "ipc", "host", BIG, 80, 3 * BIG, 5),
                row(NN, "ipc", "java", BIG, 200, 3 * BIG, 5));
        assertTrue(Verdict.of(NN, rows)
                .text()
                .contains("java over ipc: 200 ms (5.0 × slower); fastest other path, "
                        + "host over ipc: 80.0 ms (2.0 × slower)."));
    }

    @Test
    void shouldCallOutASlowPredictAndAMismatch() {
        Row cuda = row(NN, "ipc", "cuda", BIG, 40, 0, 90);
        Row host = new Row(NN, "ipc", "host", BIG, 80, 80, 80, 0, 3 * BIG, 30, false, "synthetic");
        Verdict v = Verdict.of(NN, List.of(cuda, host));
        assertTrue(
                v.text()
                        .endsWith(" Its predict took 90.0 ms, 3.0 × the fastest (30.0 ms after host over ipc). "
                                + "MISMATCH after host over ipc."),
                v.text());
        assertFalse(Verdict.of(
                        NN,
                        List.of(row(NN, "ipc", "cuda", BIG, 40, 0, 44), row(NN, "ipc", "host", BIG, 80, 3 * BIG, 30)))
                .text()
                .contains("predict"));
    }

    @Test
    void shouldSayWhatIsMissingInsteadOfComparing() {
        assertEquals(
                "NearestNeighbors: nothing was measured.",
                Verdict.of(NN, List.of()).text());
        Verdict noCuda = Verdict.of(NN, List.of(row(NN, "tcp", "host", BIG, 80, 3 * BIG, 5)));
        assertFalse(noCuda.cudaAhead());
        assertEquals(
                "NearestNeighbors (64.0 MiB): no cuda path was measured, so there is nothing to compare.",
                noCuda.text());
        Verdict onlyCuda = Verdict.of(NN, List.of(row(NN, "ipc", "cuda", BIG, 40, 0, 5)));
        assertFalse(onlyCuda.cudaAhead());
        assertEquals(
                "NearestNeighbors (64.0 MiB): cuda over ipc: 40.0 ms, 0 B through host; no other family was "
                        + "measured.",
                onlyCuda.text());
    }

    @Test
    void shouldGiveOneVerdictPerModelInTheOrderMeasuredAndFollowTheNumbers() {
        DemoResults r = Tables.run(BIG, List.of(1L << 20));
        List<Verdict> all = Verdict.all(r.rows());
        assertEquals(
                List.of("LinearRegression", "KMeans", "RandomForestClassifier", NN),
                all.stream().map(Verdict::model).toList());
        Verdict payload = all.getLast();
        assertTrue(payload.cudaAhead(), payload.text());
        assertTrue(payload.text().startsWith("NearestNeighbors (64.0 MiB): cuda over ipc: "), payload.text());
        // the same table with the cuda rows made slow: the verdict turns, nothing in it is fixed in advance
        List<Row> slowed = r.rowsOf(NN).stream()
                .map(x -> x.family().equals("cuda")
                        ? new Row(
                                x.model(),
                                x.transport(),
                                x.family(),
                                x.modelBytes(),
                                10 * x.broadcastMillis(),
                                10 * x.broadcastMinMillis(),
                                10 * x.broadcastMaxMillis(),
                                x.d2h(),
                                x.h2d(),
                                x.predictMillis(),
                                x.match(),
                                x.detail())
                        : x)
                .toList();
        Verdict turned = Verdict.of(NN, slowed);
        assertFalse(turned.cudaAhead(), turned.text());
        assertTrue(turned.text().contains("cuda is not ahead: host over ipc took"), turned.text());
    }

    @Test
    void shouldRefuseRowsOfAnotherModel() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Verdict.of(NN, List.of(row("KMeans", "tcp", "cuda", 256, 1, 0, 1))));
        assertEquals("a row of KMeans in the verdict on NearestNeighbors", e.getMessage());
    }

    @Test
    void shouldWriteLargeRatiosWithoutADecimal() {
        Verdict v = Verdict.of(
                NN, List.of(row(NN, "ipc", "cuda", BIG, 1.25, 0, 5), row(NN, "tcp", "java", BIG, 3150, 3 * BIG, 5)));
        assertTrue(v.text().contains("java over tcp: 3150 ms (2520 × slower)"), v.text());
    }

    @Test
    void shouldFormatMillisecondsToAboutThreeDigits() {
        assertEquals("0.42", Verdict.ms(0.42));
        assertEquals("3.14", Verdict.ms(3.14159));
        assertEquals("27.2", Verdict.ms(27.19));
        assertEquals("612", Verdict.ms(612.3));
    }
}
