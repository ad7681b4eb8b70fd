package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ReportTest {
    private static final List<Long> SIZES = List.of(1L << 20, 4L << 20, 16L << 20);
    private static final Pattern AREA = Pattern.compile(
            "<rect class=\"plot-area\" x=\"(\\d+)\" y=\"(\\d+)\" " + "width=\"(\\d+)\" height=\"(\\d+)\"");
    private static final Pattern CIRCLE =
            Pattern.compile("<circle cx=\"([-\\d.]+)\" cy=\"([-\\d.]+)\" " + "r=\"([\\d.]+)\"");

    @Test
    void shouldPutTheVerdictsFirstThenTheTablesThenTheSweep() {
        DemoResults r = Tables.run(64L << 20, SIZES);
        List<Verdict> verdicts = Verdict.all(r.rows());
        String html = Report.html(r, verdicts);
        int verdict = html.indexOf("<section id=\"verdict\">");
        int firstTable = html.indexOf("<table>");
        int sweep = html.indexOf("<section id=\"sweep\">");
        assertTrue(verdict > 0 && verdict < firstTable && firstTable < sweep, html);
        for (Verdict v : verdicts) {
            assertTrue(
                    html.contains("<li class=\"" + (v.cudaAhead() ? "ahead" : "behind") + "\">" + Report.esc(v.text())
                            + "</li>"),
                    v.text());
        }
        assertEquals(1 + 4, count(html, "<table>"), "the fits and one table per model");
        assertTrue(html.contains("<h2>NearestNeighbors (64.0 MiB)</h2>"), html);
        assertTrue(html.contains("transport nvlink skipped: synthetic: not a transport"), html);
    }

    @Test
    void shouldPlotEverySeriesWithEveryPointInsideThePlotArea() {
        DemoResults r = Tables.run(64L << 20, SIZES);
        String svg = sweepSvg(Report.html(r, Verdict.all(r.rows())));
        Matcher a = AREA.matcher(svg);
        assertTrue(a.find(), svg);
        double x0 = Double.parseDouble(a.group(1));
        double y0 = Double.parseDouble(a.group(2));
        double x1 = x0 + Double.parseDouble(a.group(3));
        double y1 = y0 + Double.parseDouble(a.group(4));
        List<String> series = seriesOf(svg);
        assertEquals(9, series.size(), svg);
        for (String s : series) {
            Matcher c = CIRCLE.matcher(s);
            int points = 0;
            while (c.find()) {
                double cx = Double.parseDouble(c.group(1));
                double cy = Double.parseDouble(c.group(2));
                double rad = Double.parseDouble(c.group(3));
                assertTrue(
                        cx - rad >= x0 && cx + rad <= x1 && cy - rad >= y0 && cy + rad <= y1,
                        "point (" + cx + ", " + cy + ") outside [" + x0 + ", " + y0 + ", " + x1 + ", " + y1 + "]");
                points++;
            }
            assertEquals(SIZES.size() + 1, points, s);
            assertTrue(s.contains("<polyline"), s);
        }
        // larger models take longer in the synthetic table: each series climbs (smaller y) from left to right
        Matcher c = CIRCLE.matcher(series.getFirst());
        double lastX = -1;
        double lastY = Double.MAX_VALUE;
        while (c.find()) {
            double cx = Double.parseDouble(c.group(1));
            double cy = Double.parseDouble(c.group(2));
            assertTrue(cx > lastX && cy < lastY, series.getFirst());
            lastX = cx;
            lastY = cy;
        }
        assertTrue(svg.contains(">1 MiB</text>") && svg.contains(">64 MiB</text>"), svg);
    }

    @Test
    void shouldLeaveOutAndCountPointsThatHaveNoPlaceOnALogAxis() {
        List<LogPlot.Series> series = List.of(
                new LogPlot.Series(
                        "a", "#000", "", List.of(new double[] {1, 2}, new double[] {4, 0}, new double[] {16, 30})),
                new LogPlot.Series("b", "#111", "2 3", List.of(new double[] {4, Double.NaN})));
        String svg = LogPlot.svg("t", "x", "y", series, v -> String.valueOf((long) v));
        assertEquals(2, count(svg, "<circle"), svg);
        assertTrue(svg.contains("2 points at 0 or below not drawn"), svg);
        assertEquals(2, count(svg, "class=\"series\""), svg);
    }

    @Test
    void shouldDrawASingleSizeInTheMiddleOfItsAxes() {
        String svg = LogPlot.svg(
                "t",
                "x",
                "y",
                List.of(new LogPlot.Series("a", "#000", "", List.<double[]>of(new double[] {1 << 20, 5}))),
                v -> "1 MiB");
        Matcher c = CIRCLE.matcher(svg);
        assertTrue(c.find(), svg);
        assertEquals(70 + (530 - 70) / 2.0, Double.parseDouble(c.group(1)), 0.1, svg);
    }

    @Test
    void shouldLabelSizesInWholeUnitsAndLeaveOutALabelThatWouldTouchItsNeighbour() {
        assertEquals("512 MiB", Report.size(512L << 20));
        assertEquals("1 GiB", Report.size(1L << 30));
        assertEquals("64 KiB", Report.size(64L << 10));
        assertEquals("1.5 MiB", Report.size(3L << 19));
        List<double[]> points = new ArrayList<>();
        for (long s = 1L << 20; s <= 512L << 20; s *= 2) {
            points.add(new double[] {s, s / 1e6});
        }
        String svg = LogPlot.svg(
                "t", "x", "y", List.of(new LogPlot.Series("a", "#000", "", points)), v -> Report.size((long) v));
        assertTrue(svg.contains(">512 MiB</text>") && svg.contains(">1 MiB</text>"), svg);
        assertTrue(!svg.contains(">256 MiB</text>"), "one doubling left of the last label: " + svg);
        assertEquals(10, count(svg, "<circle"), svg);
    }

    @Test
    void shouldTickOneTwoAndFiveTimesThePowersOfTenWithinTheRange() {
        assertEquals(List.of(5.0, 10.0, 20.0, 50.0, 100.0, 200.0), LogPlot.yTicks(4, 250, new double[] {1, 2, 5}));
        assertEquals(List.of(0.01, 0.1, 1.0), LogPlot.yTicks(0.008, 1.1, new double[] {1}));
    }

    private static String sweepSvg(String html) {
        int from = html.indexOf("<svg class=\"sweep\"");
        assertTrue(from >= 0, html);
        return html.substring(from, html.indexOf("</svg>", from));
    }

    private static List<String> seriesOf(String svg) {
        List<String> out = new ArrayList<>();
        for (int at = svg.indexOf("<g class=\"series\""); at >= 0; at = svg.indexOf("<g class=\"series\"", at + 1)) {
            out.add(svg.substring(at, svg.indexOf("</g>", at)));
        }
        return out;
    }

    private static int count(String s, String what) {
        int n = 0;
        for (int at = s.indexOf(what); at >= 0; at = s.indexOf(what, at + 1)) {
            n++;
        }
        return n;
    }
}
