package io.cuwire.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * The demo's HTML report: one self-contained page ({@code index.html}) with the fits, a table per model and inline
 * SVG bar charts per model (broadcast time, bytes copied between device and host, predict time). Plain text, no AWT.
 */
final class Report {
    private static final int LABEL = 110;
    private static final int BAR = 220;
    private static final int ROW = 22;

    private Report() {
    }

    /** Writes {@code dir/index.html}; returns its path. */
    static Path write(Demo demo, Path dir) throws IOException {
        Files.createDirectories(dir);
        StringBuilder h = new StringBuilder();
        h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cuwire demo</title>\n")
                .append("<style>body{font-family:sans-serif;margin:2em;max-width:72em}table{border-collapse:collapse}")
                .append("td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child")
                .append("{text-align:left}.ok{color:#2a7d2a}.bad{color:#c00;font-weight:bold}.charts{display:flex;")
                .append("flex-wrap:wrap;gap:1.5em}</style></head><body>\n");
        h.append("<h1>cuwire demo</h1>\n<p>").append(esc(demo.setting)).append("</p>\n");
        h.append("<h2>Fits on the workers</h2>\n<table><tr><th>model</th><th>fit ms</th><th>check</th><th>detail</th>"
                + "</tr>\n");
        for (Demo.Fit f : demo.fits) {
            h.append("<tr><td>").append(esc(f.model())).append("</td><td>").append(num(f.millis())).append("</td>")
                    .append(check(f.match())).append("<td>").append(esc(f.detail())).append("</td></tr>\n");
        }
        h.append("</table>\n");
        for (String model : demo.modelNames()) {
            List<Demo.Row> rows = new ArrayList<>();
            for (Demo.Row r : demo.rows) {
                if (r.model().equals(model)) {
                    rows.add(r);
                }
            }
            h.append("<h2>").append(esc(model)).append("</h2>\n<table><tr><th>transport / family</th>")
                    .append("<th>broadcast ms</th><th>D2H bytes</th><th>H2D bytes</th><th>predict ms</th>")
                    .append("<th>check</th><th>detail</th></tr>\n");
            for (Demo.Row r : rows) {
                h.append("<tr><td>").append(esc(r.path())).append("</td><td>").append(num(r.broadcastMillis()))
                        .append("</td><td>").append(String.format(Locale.ROOT, "%,d", r.d2h())).append("</td><td>")
                        .append(String.format(Locale.ROOT, "%,d", r.h2d())).append("</td><td>")
                        .append(num(r.predictMillis())).append("</td>").append(check(r.match())).append("<td>")
                        .append(esc(r.detail())).append("</td></tr>\n");
            }
            h.append("</table>\n<div class=\"charts\">\n");
            h.append(chart("broadcast (ms)", rows, Demo.Row::broadcastMillis, "#4C78A8", "%.1f"));
            h.append(chart("copied device&#8596;host (KiB)", rows, r -> (r.d2h() + r.h2d()) / 1024.0, "#E45756",
                    "%.1f"));
            h.append(chart("predict (ms)", rows, Demo.Row::predictMillis, "#54A24B", "%.1f"));
            h.append("</div>\n");
        }
        h.append("<h2>Notes</h2>\n<ul>\n<li>").append(esc(Demo.JAVA_NOTE)).append(".</li>\n");
        for (Demo.Skipped s : demo.skipped) {
            h.append("<li>transport ").append(esc(s.transport())).append(" skipped: ").append(esc(s.reason()))
                    .append("</li>\n");
        }
        h.append("<li>D2H, H2D: bytes the copy engines of the client and all workers moved between device and host "
                + "memory during the broadcast. cuda keeps device arrays device frames (over tcp they are staged "
                + "through host bounce buffers); host copies them to host frames once at the client and rebuilds them "
                + "on each worker's device; java copies them to the heap inside one JDK serialization stream.</li>\n"
                + "</ul>\n</body></html>\n");
        Path file = dir.resolve("index.html");
        Files.writeString(file, h, StandardCharsets.UTF_8);
        return file;
    }

    /** A horizontal bar chart as inline SVG. */
    private static String chart(String title, List<Demo.Row> rows, ToDoubleFunction<Demo.Row> value, String color,
            String format) {
        double max = 0;
        for (Demo.Row r : rows) {
            max = Math.max(max, value.applyAsDouble(r));
        }
        int width = LABEL + BAR + 70;
        int height = 28 + rows.size() * ROW;
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "font-family=\"sans-serif\" font-size=\"12\">%n", width, height));
        s.append("<text x=\"0\" y=\"14\" font-weight=\"bold\">").append(title).append("</text>\n");
        for (int i = 0; i < rows.size(); i++) {
            double v = value.applyAsDouble(rows.get(i));
            int w = max > 0 ? (int) Math.round(v / max * BAR) : 0;
            int y = 22 + i * ROW;
            s.append(String.format(Locale.ROOT, "<text x=\"0\" y=\"%d\">%s</text>", y + 14,
                    esc(rows.get(i).path())));
            s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>",
                    LABEL, y + 3, Math.max(w, 1), ROW - 6, color));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"#333\">%s</text>%n", LABEL + w + 4,
                    y + 14, String.format(Locale.ROOT, format, v)));
        }
        return s.append("</svg>\n").toString();
    }

    private static String check(boolean match) {
        return match ? "<td class=\"ok\">MATCH</td>" : "<td class=\"bad\">MISMATCH</td>";
    }

    private static String num(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    private static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
