package io.cuwire.cli;

import io.cuwire.cli.DemoResults.Row;
import io.cuwire.cli.DemoResults.SweepPoint;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.DoubleFunction;
import java.util.function.ToDoubleFunction;

/**
 * The demo's HTML report: one self-contained page ({@code index.html}) with the verdicts at the top, the fits, a table
 * and inline SVG bar charts per model (broadcast time, bytes copied between device and host, predict time), and the
 * sweep of the payload model's broadcast time against its size on log axes ({@link LogPlot}). Plain text, no AWT.
 */
final class Report {
    private static final int LABEL = 110;
    private static final int BAR = 220;
    private static final int ROW = 22;
    /** Series colors by family and dashes by transport in the sweep plot. */
    private static final Map<String, String> COLORS = Map.of("cuda", "#4C78A8", "host", "#F58518", "java", "#E45756");

    private static final Map<String, String> DASHES = Map.of("tcp", "", "ipc", "7 3", "ucx", "2 3");

    private Report() {}

    /** Writes {@code dir/index.html}; returns its path. */
    static Path write(DemoResults results, List<Verdict> verdicts, Path dir) throws IOException {
        Files.createDirectories(dir);
        Path file = dir.resolve("index.html");
        Files.writeString(file, html(results, verdicts), StandardCharsets.UTF_8);
        return file;
    }

    /** The page. */
    static String html(DemoResults results, List<Verdict> verdicts) {
        StringBuilder h = new StringBuilder();
        h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cuwire demo</title>\n")
                .append("<style>body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse}")
                .append("td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child")
                .append("{text-align:left}td.detail{text-align:left;overflow-wrap:anywhere}.ok{color:#2a7d2a}")
                .append(".bad{color:#c00;font-weight:bold}.charts{display:flex;flex-wrap:wrap;gap:1.5em}")
                .append("#verdict li{margin:.4em 0}#verdict li.behind{color:#8a4b00}</style></head><body>\n");
        h.append("<h1>cuwire demo</h1>\n<p>").append(esc(results.setting())).append("</p>\n");
        h.append("<section id=\"verdict\"><h2>Verdict</h2>\n<ul>\n");
        for (Verdict v : verdicts) {
            h.append("<li class=\"")
                    .append(v.cudaAhead() ? "ahead" : "behind")
                    .append("\">")
                    .append(esc(v.text()))
                    .append("</li>\n");
        }
        h.append("</ul>\n<p>Computed from the tables below: per model, the fastest cuda path against java over tcp "
                        + "(JDK serialization, the pickle baseline) and the fastest path of another family; broadcast times "
                        + "are the median of ")
                .append(results.repeat())
                .append(" timed broadcasts per path, after one "
                        + "untimed broadcast of every path.</p>\n</section>\n");
        h.append("<h2>Fits on the workers</h2>\n<table><tr><th>model</th><th>fit ms</th><th>check</th><th>detail</th>"
                + "</tr>\n");
        for (DemoResults.Fit f : results.fits()) {
            h.append("<tr><td>")
                    .append(esc(f.model()))
                    .append("</td><td>")
                    .append(Verdict.ms(f.millis()))
                    .append("</td>")
                    .append(check(f.match()))
                    .append("<td class=\"detail\">")
                    .append(esc(f.detail()))
                    .append("</td></tr>\n");
        }
        h.append("</table>\n");
        for (String model : results.modelNames()) {
            List<Row> rows = results.rowsOf(model);
            h.append("<h2>")
                    .append(esc(model))
                    .append(" (")
                    .append(esc(Info.bytes(rows.getFirst().modelBytes())))
                    .append(")</h2>\n<table><tr><th>transport / family</th><th>broadcast ms</th><th>min–max ms</th>")
                    .append("<th>D2H bytes</th><th>H2D bytes</th><th>predict ms</th><th>check</th><th>detail</th>")
                    .append("</tr>\n");
            for (Row r : rows) {
                h.append("<tr><td>")
                        .append(esc(r.path()))
                        .append("</td><td>")
                        .append(Verdict.ms(r.broadcastMillis()))
                        .append("</td><td>")
                        .append(Verdict.ms(r.broadcastMinMillis()))
                        .append("–")
                        .append(Verdict.ms(r.broadcastMaxMillis()))
                        .append("</td><td>")
                        .append(String.format(Locale.ROOT, "%,d", r.d2h()))
                        .append("</td><td>")
                        .append(String.format(Locale.ROOT, "%,d", r.h2d()))
                        .append("</td><td>")
                        .append(Verdict.ms(r.predictMillis()))
                        .append("</td>")
                        .append(check(r.match()))
                        .append("<td class=\"detail\">")
                        .append(esc(r.detail()))
                        .append("</td></tr>\n");
            }
            h.append("</table>\n<div class=\"charts\">\n");
            h.append(chart("broadcast (ms)", rows, Row::broadcastMillis, "#4C78A8", Verdict::ms));
            h.append(chart("copied device&#8596;host", rows, r -> r.hostBytes(), "#E45756", v -> Info.bytes((long) v)));
            h.append(chart("predict (ms)", rows, Row::predictMillis, "#54A24B", Verdict::ms));
            h.append("</div>\n");
        }
        if (!results.sweep().isEmpty()) {
            h.append("<section id=\"sweep\"><h2>Broadcast time against model size</h2>\n");
            h.append(LogPlot.svg(
                    "broadcast of the payload model to every worker",
                    "model size (array bytes, log " + "scale)",
                    "broadcast ms (log scale)",
                    series(results.sweep()),
                    v -> size((long) v)));
            h.append("<p>Each point: the median of ")
                    .append(results.repeat())
                    .append(" broadcasts of the payload "
                            + "model at that size, refitted before each so that no worker holds it; the largest size is the "
                            + "payload model's table above. Colors: the family; lines: the transport (tcp solid, ipc dashed, "
                            + "ucx dotted).</p>\n</section>\n");
        }
        h.append("<h2>Notes</h2>\n<ul>\n<li>").append(esc(Demo.JAVA_NOTE)).append(".</li>\n");
        for (DemoResults.Skipped s : results.skipped()) {
            h.append("<li>transport ")
                    .append(esc(s.transport()))
                    .append(" skipped: ")
                    .append(esc(s.reason()))
                    .append("</li>\n");
        }
        h.append("<li>").append(esc(Demo.TABLE_NOTE)).append("</li>\n</ul>\n</body></html>\n");
        return h.toString();
    }

    /** One series per transport and family, in the order first seen. */
    private static List<LogPlot.Series> series(List<SweepPoint> points) {
        Map<String, List<double[]>> byPath = new LinkedHashMap<>();
        Map<String, SweepPoint> first = new LinkedHashMap<>();
        for (SweepPoint p : points) {
            byPath.computeIfAbsent(p.path(), k -> new ArrayList<>()).add(new double[] {p.bytes(), p.broadcastMillis()});
            first.putIfAbsent(p.path(), p);
        }
        List<LogPlot.Series> series = new ArrayList<>();
        byPath.forEach((path, xy) -> {
            SweepPoint p = first.get(path);
            series.add(new LogPlot.Series(
                    path, COLORS.getOrDefault(p.family(), "#555"), DASHES.getOrDefault(p.transport(), "1 1"), xy));
        });
        return series;
    }

    /** A horizontal bar chart as inline SVG. */
    private static String chart(
            String title, List<Row> rows, ToDoubleFunction<Row> value, String color, DoubleFunction<String> format) {
        double max = 0;
        for (Row r : rows) {
            max = Math.max(max, value.applyAsDouble(r));
        }
        int width = LABEL + BAR + 80;
        int height = 28 + rows.size() * ROW;
        StringBuilder s = new StringBuilder();
        s.append(String.format(
                Locale.ROOT,
                "<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                        + "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">%n",
                width,
                height));
        s.append("<text x=\"0\" y=\"14\" font-weight=\"bold\">").append(title).append("</text>\n");
        for (int i = 0; i < rows.size(); i++) {
            double v = value.applyAsDouble(rows.get(i));
            int w = max > 0 ? (int) Math.round(v / max * BAR) : 0;
            int y = 22 + i * ROW;
            s.append(String.format(
                    Locale.ROOT,
                    "<text x=\"0\" y=\"%d\">%s</text>",
                    y + 14,
                    esc(rows.get(i).path())));
            s.append(String.format(
                    Locale.ROOT,
                    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>",
                    LABEL,
                    y + 3,
                    Math.max(w, 1),
                    ROW - 6,
                    color));
            s.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%d\" y=\"%d\" fill=\"#333\">%s</text>%n",
                    LABEL + w + 4,
                    y + 14,
                    esc(format.apply(v))));
        }
        return s.append("</svg>\n").toString();
    }

    /** {@code bytes} in the largest binary unit it fills: a whole number without decimals ({@code 512 MiB}). */
    static String size(long bytes) {
        String[] units = {"KiB", "MiB", "GiB"};
        for (int i = units.length - 1; i >= 0; i--) {
            long unit = 1L << (10 * (i + 1));
            if (bytes >= unit) {
                return bytes % unit == 0 ? bytes / unit + " " + units[i] : Info.bytes(bytes);
            }
        }
        return Info.bytes(bytes);
    }

    private static String check(boolean match) {
        return match ? "<td class=\"ok\">MATCH</td>" : "<td class=\"bad\">MISMATCH</td>";
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
