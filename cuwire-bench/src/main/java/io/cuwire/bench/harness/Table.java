package io.cuwire.bench.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The benchmarks' one writer of result tables: named columns, rows of cells as text, written as CSV (RFC 4180
 * quoting) or as a Markdown table ({@code |} in a cell escaped). Not thread-safe.
 */
public final class Table {
    private final List<String> columns;
    private final List<List<String>> rows = new ArrayList<>();

    /** A table with these column names. */
    public Table(String... columns) {
        if (columns.length == 0) {
            throw new IllegalArgumentException("a table needs at least one column");
        }
        this.columns = List.of(columns);
    }

    /**
     * Adds a row; {@code null} cells are empty.
     *
     * @throws IllegalArgumentException if the row does not have one cell per column
     */
    public Table row(Object... cells) {
        if (cells.length != columns.size()) {
            throw new IllegalArgumentException("row of " + cells.length + " cells " + Arrays.toString(cells)
                    + " (expected: " + columns.size() + ", one per column " + columns + ")");
        }
        List<String> row = new ArrayList<>(cells.length);
        for (Object c : cells) {
            row.add(c == null ? "" : c.toString());
        }
        rows.add(row);
        return this;
    }

    /** The rows added so far. */
    public int size() {
        return rows.size();
    }

    /** {@code value} with {@code decimals} digits after the point, in the root locale: {@code num(1.5, 3)}. */
    public static String num(double value, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", value);
    }

    /** The CSV text: a header line, one line per row, each ended by a newline. */
    public String csv() {
        StringBuilder b = new StringBuilder();
        appendCsv(b, columns);
        for (List<String> r : rows) {
            appendCsv(b, r);
        }
        return b.toString();
    }

    /** The Markdown table: header, rule and one line per row, each ended by a newline. */
    public String markdown() {
        StringBuilder b = new StringBuilder();
        appendMarkdown(b, columns);
        b.append('|');
        for (int i = 0; i < columns.size(); i++) {
            b.append("---|");
        }
        b.append('\n');
        for (List<String> r : rows) {
            appendMarkdown(b, r);
        }
        return b.toString();
    }

    /**
     * Writes {@code text} to {@code file} (UTF-8), creating its directory.
     *
     * @throws UncheckedIOException naming the file when it cannot be written
     */
    public static Path write(Path file, String text) {
        try {
            Path dir = file.toAbsolutePath().getParent();
            if (dir != null) {
                Files.createDirectories(dir);
            }
            return Files.writeString(file, text, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    private static void appendCsv(StringBuilder b, List<String> cells) {
        for (int i = 0; i < cells.size(); i++) {
            String c = cells.get(i);
            if (i > 0) {
                b.append(',');
            }
            if (c.indexOf(',') >= 0 || c.indexOf('"') >= 0 || c.indexOf('\n') >= 0 || c.indexOf('\r') >= 0) {
                b.append('"').append(c.replace("\"", "\"\"")).append('"');
            } else {
                b.append(c);
            }
        }
        b.append('\n');
    }

    private static void appendMarkdown(StringBuilder b, List<String> cells) {
        b.append('|');
        for (String c : cells) {
            b.append(' ').append(c.replace("|", "\\|").replace('\n', ' ')).append(" |");
        }
        b.append('\n');
    }
}
