package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The report in a real headless browser: after layout, every table, cell, chart element and plotted point must lie
 * inside its table, its svg and its axes ({@code report-layout.js}, through {@link HeadlessChromium}). Skipped, with
 * the reason, where no chromium is installed; CI installs it ({@code .ci/run}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReportBrowserTest {
    private static final List<Long> SIZES = List.of(1L << 20, 4L << 20, 16L << 20, 64L << 20, 256L << 20);

    @TempDir
    static Path dir;

    private static HeadlessChromium browser;

    @BeforeAll
    static void startBrowser() throws Exception {
        Optional<Path> chromium = HeadlessChromium.find();
        Assumptions.assumeTrue(chromium.isPresent(), HeadlessChromium::missing);
        browser = HeadlessChromium.start(chromium.get(), Files.createDirectories(dir.resolve("profile")));
    }

    @AfterAll
    static void stopBrowser() {
        if (browser != null) {
            browser.close();
        }
    }

    @Test
    void shouldDrawEveryTableAndEveryPlottedSeriesInsideItsAxes() throws Exception {
        DemoResults r = Tables.run(512L << 20, SIZES);
        Path page = Report.write(r, Verdict.all(r.rows()), dir.resolve("good"));
        Map<String, Object> layout = layout(browser, page);
        assertEquals(List.of(), layout.get("problems"), String.valueOf(layout));
        assertEquals(5.0, layout.get("tables"), "the fits and one table per model");
        assertEquals(9.0, layout.get("series"), "three transports x three families");
        assertEquals(9.0 * (SIZES.size() + 1), layout.get("points"));
        assertEquals(1.0 + 4 * 3, layout.get("svgs"), "the sweep and three bar charts per model");
    }

    @Test
    void shouldFindAPointOutsideTheAxesAndATableCellThatOverflows() throws Exception {
        DemoResults r = Tables.run(64L << 20, List.of(1L << 20));
        String html = Report.html(r, Verdict.all(r.rows()));
        int circle = html.indexOf("<circle cx=\"");
        String broken = html.substring(0, circle) + "<circle cx=\"-40\" cy=\"12\" r=\"3\"/>" + html.substring(circle);
        broken = broken.replace(
                "</body>",
                "<table style=\"width:120px;table-layout:fixed\"><tr><td style=\""
                        + "white-space:nowrap\">an_unbreakable_cell_far_wider_than_its_table_allows</td></tr></table></body>");
        Path page = dir.resolve("broken/index.html");
        Files.createDirectories(page.getParent());
        Files.writeString(page, broken, StandardCharsets.UTF_8);
        List<?> problems = (List<?>) layout(browser, page).get("problems");
        String all = String.valueOf(problems);
        assertTrue(all.contains("lies outside the axes") && all.contains("lies outside the svg"), all);
        assertTrue(all.contains("overflows its cell"), all);
    }

    /** Opens {@code page} in {@code browser} and runs the layout checks; their JSON result. */
    static Map<String, Object> layout(HeadlessChromium browser, Path page) throws IOException, InterruptedException {
        browser.open(page.toUri());
        @SuppressWarnings("unchecked")
        Map<String, Object> result = (Map<String, Object>) Json.parse((String) browser.evaluate(script()));
        return result;
    }

    private static String script() {
        try (InputStream in = ReportBrowserTest.class.getResourceAsStream("report-layout.js")) {
            if (in == null) {
                throw new IllegalStateException("report-layout.js is not on the test class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
