package io.cuwire.cli;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;
import javax.imageio.ImageIO;

/** The demo's bar chart: per path, its time and the bytes it copied to the host, as a PNG (Java2D, headless). */
final class Plot {
    private static final int LABEL = 330;
    private static final int PANEL = 300;
    private static final int ROW = 24;
    private static final int TOP = 60;

    private Plot() {
    }

    static void write(List<Demo.Row> rows, Path file, String title) throws IOException {
        System.setProperty("java.awt.headless", "true");
        int width = LABEL + 2 * (PANEL + 40) + 20;
        int height = TOP + rows.size() * ROW + 30;
        BufferedImage image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            g.setColor(Color.BLACK);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
            g.drawString(title, 10, 20);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
            for (int i = 0; i < rows.size(); i++) {
                g.drawString(rows.get(i).path(), 10, TOP + i * ROW + 16);
            }
            panel(g, rows, LABEL, "time (ms)", Demo.Row::millis, new Color(0x4C78A8), "%.0f");
            panel(g, rows, LABEL + PANEL + 40, "device to host (MiB)", r -> r.d2h() / 1048576.0,
                    new Color(0xE45756), "%.1f");
        } finally {
            g.dispose();
        }
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        if (!ImageIO.write(image, "png", file.toFile())) {
            throw new IOException("no PNG writer in this Java runtime");
        }
    }

    private static void panel(Graphics2D g, List<Demo.Row> rows, int x0, String name,
            ToDoubleFunction<Demo.Row> value, Color color, String format) {
        double max = 0;
        for (Demo.Row r : rows) {
            max = Math.max(max, value.applyAsDouble(r));
        }
        g.setColor(Color.BLACK);
        g.drawString(name, x0, TOP - 12);
        g.setColor(Color.GRAY);
        g.setStroke(new BasicStroke(1));
        g.drawLine(x0, TOP - 4, x0, TOP + rows.size() * ROW);
        for (int i = 0; i < rows.size(); i++) {
            double v = value.applyAsDouble(rows.get(i));
            int w = max > 0 ? (int) Math.round(v / max * (PANEL - 50)) : 0;
            g.setColor(color);
            g.fillRect(x0 + 1, TOP + i * ROW + 4, w, ROW - 8);
            g.setColor(Color.DARK_GRAY);
            g.drawString(String.format(Locale.ROOT, format, v), x0 + w + 5, TOP + i * ROW + 16);
        }
    }
}
