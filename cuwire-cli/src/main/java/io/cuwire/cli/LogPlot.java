package io.cuwire.cli;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.function.DoubleFunction;

/**
 * A line plot on log-log axes as inline SVG text (no AWT: the GPU bundle's runtime has no {@code java.desktop}).
 * The plot area is the {@code rect} of class {@code plot-area}; each series is a {@code g} of class {@code series}
 * (its name in {@code data-series}) holding a {@code polyline} through its points and a {@code circle} per point,
 * all inside the plot area; the legend sits right of it. The x ticks are the points' own x values, the y ticks 1, 2
 * and 5 times the powers of ten within the data's range (the powers alone when that makes too many). Points whose x
 * or y is not positive cannot sit on a log axis: they are left out, and the caption under the plot counts them.
 */
final class LogPlot {
    static final int WIDTH = 700;
    static final int HEIGHT = 400;
    private static final int LEFT = 70;
    private static final int TOP = 34;
    private static final int RIGHT = WIDTH - 170;
    private static final int BOTTOM = HEIGHT - 56;
    /** Points stay this far inside the plot area, so that their markers do too. */
    private static final int PAD = 10;

    private static final double RADIUS = 3.5;
    /** More y ticks than this and only the powers of ten get one. */
    private static final int MAX_TICKS = 12;

    /**
     * One line of the plot.
     *
     * @param name its legend entry, also {@code data-series}
     * @param color an SVG color
     * @param dash an SVG {@code stroke-dasharray}, or empty for a solid line
     * @param points {@code {x, y}} pairs
     */
    record Series(String name, String color, String dash, List<double[]> points) {
        Series {
            points = List.copyOf(points);
        }
    }

    private LogPlot() {}

    /** The plot as an {@code svg} element of class {@code sweep}; {@code xTick} labels the x values. */
    static String svg(String title, String xLabel, String yLabel, List<Series> series, DoubleFunction<String> xTick) {
        TreeSet<Double> xs = new TreeSet<>();
        double yMin = Double.POSITIVE_INFINITY;
        double yMax = Double.NEGATIVE_INFINITY;
        int dropped = 0;
        for (Series s : series) {
            for (double[] p : s.points()) {
                if (drawable(p)) {
                    xs.add(p[0]);
                    yMin = Math.min(yMin, p[1]);
                    yMax = Math.max(yMax, p[1]);
                } else {
                    dropped++;
                }
            }
        }
        StringBuilder s = new StringBuilder();
        s.append(String.format(
                Locale.ROOT,
                "<svg class=\"sweep\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                        + "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n",
                WIDTH,
                HEIGHT,
                WIDTH,
                HEIGHT));
        s.append(String.format(
                Locale.ROOT, "<text x=\"%d\" y=\"18\" font-weight=\"bold\">%s</text>%n", LEFT, Report.esc(title)));
        s.append(String.format(
                Locale.ROOT,
                "<rect class=\"plot-area\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                        + "fill=\"none\" stroke=\"#888\"/>%n",
                LEFT,
                TOP,
                RIGHT - LEFT,
                BOTTOM - TOP));
        if (xs.isEmpty()) {
            s.append(String.format(
                    Locale.ROOT, "<text x=\"%d\" y=\"%d\">no points to plot</text>%n", LEFT + PAD, (TOP + BOTTOM) / 2));
        } else {
            double x0 = xs.first();
            double x1 = xs.last();
            if (x0 == x1) {
                x0 /= 2;
                x1 *= 2;
            }
            double y0 = yMin / (yMin == yMax ? 2 : 1.25);
            double y1 = yMax * (yMin == yMax ? 2 : 1.25);
            Axes a = new Axes(Math.log(x0), Math.log(x1), Math.log(y0), Math.log(y1));
            axes(s, a, xs, y0, y1, xTick);
            for (Series line : series) {
                series(s, a, line, xTick);
            }
        }
        s.append(String.format(
                Locale.ROOT,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                (LEFT + RIGHT) / 2,
                BOTTOM + 36,
                Report.esc(xLabel)));
        s.append(String.format(
                Locale.ROOT,
                "<text x=\"16\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + "%d)\">%s</text>%n",
                (TOP + BOTTOM) / 2,
                (TOP + BOTTOM) / 2,
                Report.esc(yLabel)));
        if (dropped > 0) {
            s.append(String.format(
                    Locale.ROOT,
                    "<text class=\"caption\" x=\"%d\" y=\"%d\">%d point%s at 0 or below "
                            + "not drawn (no place on a log axis)</text>%n",
                    LEFT,
                    HEIGHT - 4,
                    dropped,
                    dropped == 1 ? "" : "s"));
        }
        legend(s, series);
        return s.append("</svg>\n").toString();
    }

    private static boolean drawable(double[] p) {
        return p[0] > 0 && p[1] > 0 && Double.isFinite(p[0]) && Double.isFinite(p[1]);
    }

    /** The plot area's mapping from log values to pixels. */
    private record Axes(double lx0, double lx1, double ly0, double ly1) {
        double x(double v) {
            return LEFT + PAD + (Math.log(v) - lx0) / (lx1 - lx0) * (RIGHT - LEFT - 2 * PAD);
        }

        double y(double v) {
            return BOTTOM - PAD - (Math.log(v) - ly0) / (ly1 - ly0) * (BOTTOM - TOP - 2 * PAD);
        }
    }

    private static void axes(
            StringBuilder s, Axes a, TreeSet<Double> xs, double y0, double y1, DoubleFunction<String> xTick) {
        s.append("<g class=\"axes\" stroke=\"#ddd\">\n");
        for (double x : xs) {
            s.append(String.format(
                    Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>%n", a.x(x), TOP, a.x(x), BOTTOM));
        }
        List<Double> yTicks = yTicks(y0, y1, new double[] {1, 2, 5});
        if (yTicks.size() > MAX_TICKS) {
            yTicks = yTicks(y0, y1, new double[] {1});
        }
        for (double y : yTicks) {
            s.append(String.format(
                    Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>%n", LEFT, a.y(y), RIGHT, a.y(y)));
        }
        s.append("</g>\n<g class=\"ticks\" fill=\"#333\">\n");
        // labelled from the largest down; a label that would touch the one right of it is left out (its grid line
        // stays)
        double right = Double.POSITIVE_INFINITY;
        double rightHalf = 0;
        for (double x : xs.descendingSet()) {
            String label = xTick.apply(x);
            double half = labelWidth(label) / 2;
            if (a.x(x) + half + 4 <= right - rightHalf) {
                s.append(String.format(
                        Locale.ROOT,
                        "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                        a.x(x),
                        BOTTOM + 16,
                        Report.esc(label)));
                right = a.x(x);
                rightHalf = half;
            }
        }
        for (double y : yTicks) {
            s.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                    LEFT - 6,
                    a.y(y) + 4,
                    tick(y)));
        }
        s.append("</g>\n");
    }

    /** {@code m * 10^e} for each {@code m} of {@code mantissas}, within {@code [lo, hi]}, ascending. */
    static List<Double> yTicks(double lo, double hi, double[] mantissas) {
        List<Double> ticks = new ArrayList<>();
        for (int e = (int) Math.floor(Math.log10(lo)); e <= (int) Math.ceil(Math.log10(hi)); e++) {
            for (double m : mantissas) {
                double v = m * Math.pow(10, e);
                if (v >= lo && v <= hi) {
                    ticks.add(v);
                }
            }
        }
        return ticks;
    }

    private static void series(StringBuilder s, Axes a, Series line, DoubleFunction<String> xTick) {
        List<double[]> points =
                new ArrayList<>(line.points().stream().filter(LogPlot::drawable).toList());
        points.sort(Comparator.comparingDouble(p -> p[0]));
        s.append("<g class=\"series\" data-series=\"")
                .append(Report.esc(line.name()))
                .append("\" stroke=\"")
                .append(line.color())
                .append("\" fill=\"")
                .append(line.color())
                .append("\">\n");
        if (points.size() > 1) {
            s.append("<polyline fill=\"none\" stroke-width=\"1.5\"");
            if (!line.dash().isEmpty()) {
                s.append(" stroke-dasharray=\"").append(line.dash()).append('"');
            }
            s.append(" points=\"");
            for (double[] p : points) {
                s.append(String.format(Locale.ROOT, "%.1f,%.1f ", a.x(p[0]), a.y(p[1])));
            }
            s.setLength(s.length() - 1);
            s.append("\"/>\n");
        }
        for (double[] p : points) {
            s.append(String.format(
                    Locale.ROOT,
                    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"><title>%s: %s, %s ms" + "</title></circle>%n",
                    a.x(p[0]),
                    a.y(p[1]),
                    RADIUS,
                    Report.esc(line.name()),
                    Report.esc(xTick.apply(p[0])),
                    Verdict.ms(p[1])));
        }
        s.append("</g>\n");
    }

    private static void legend(StringBuilder s, List<Series> series) {
        s.append("<g class=\"legend\">\n");
        int y = TOP + 8;
        for (Series line : series) {
            s.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" " + "stroke-width=\"2\"%s/>",
                    RIGHT + 14,
                    y,
                    RIGHT + 40,
                    y,
                    line.color(),
                    line.dash().isEmpty() ? "" : " stroke-dasharray=\"" + line.dash() + "\""));
            s.append(String.format(
                    Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", RIGHT + 46, y + 4, Report.esc(line.name())));
            y += 18;
        }
        s.append("</g>\n");
    }

    /** A generous estimate of the width of {@code label} in 12 px sans-serif. */
    private static double labelWidth(String label) {
        return 7.5 * label.length();
    }

    /** A y tick label: 0.01, 0.2, 5, 10, 2000. */
    private static String tick(double v) {
        if (v >= 1) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        return String.format(Locale.ROOT, "%." + (int) Math.ceil(-Math.log10(v) - 1e-9) + "f", v);
    }
}
