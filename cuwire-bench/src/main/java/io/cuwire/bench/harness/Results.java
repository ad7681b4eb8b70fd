package io.cuwire.bench.harness;

import io.cuwire.memory.Device;
import io.cuwire.memory.Devices;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The benchmarks' results files under {@code bench/results/}: one current file per benchmark and machine,
 * {@code <benchmark>-<machine>.md} (and {@code .csv}), the date inside the file, never in its name. A new run goes on
 * top as {@code ## Current: Run <date> ...}; the run that was current moves, its CSV rows inline, to the top of
 * {@code ## Earlier runs}, so that the file keeps every run, newest first. Not thread-safe across processes: two
 * benchmarks recording into one file at once lose one run.
 */
public final class Results {
    /** The heading that opens the current run's section. */
    public static final String CURRENT = "## Current: ";
    /** The heading above the earlier runs. */
    public static final String EARLIER = "## Earlier runs";

    private static final String INTRO = "Newest run first: the current run, then every earlier run under \"Earlier "
            + "runs\", each headed by its date and the file it came from (`was ...`: grep an old file name to find its "
            + "run). `%s`, where present, holds the current run's rows; an earlier run's rows are inline in its "
            + "section.";

    private Results() {}

    /**
     * The machine's name in results files: {@code nvidia-h200} for one CUDA device, {@code nvidia-h200-x2} for two of
     * a kind, else {@code cpu-<cores>core} (the emulated device runs on the host's cores).
     */
    public static String machine() {
        List<String> names = new ArrayList<>();
        if (Devices.platform().equals("cuda")) {
            for (Device d : Devices.all()) {
                names.add(d.name());
            }
        }
        return machine(names, Runtime.getRuntime().availableProcessors());
    }

    /** {@link #machine()} from the CUDA devices' names (none: no CUDA device) and the cores. */
    static String machine(List<String> cudaDevices, int cores) {
        if (cudaDevices.isEmpty()) {
            return "cpu-" + cores + "core";
        }
        List<String> kinds = cudaDevices.stream().map(Results::slug).distinct().toList();
        if (kinds.size() == 1) {
            return kinds.getFirst() + (cudaDevices.size() > 1 ? "-x" + cudaDevices.size() : "");
        }
        return String.join("+", cudaDevices.stream().map(Results::slug).toList());
    }

    private static String slug(String name) {
        return name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("^-|-$", "");
    }

    /** Now, as a run's heading dates it: {@code 2026-12-02 14:05 UTC}. */
    public static String now() {
        return ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'"));
    }

    /**
     * Records a run in {@code dir/<benchmark>-<machine>.md}: the run on top, the file's earlier runs kept below it;
     * {@code csv} (or nothing) becomes {@code <benchmark>-<machine>.csv}, the previous CSV inline in its run's section.
     *
     * @param title the file's title when it is new, e.g. {@code "`cuwire bench broadcast` on nvidia-h200"}
     * @param run what heads the run's section after "Run ", e.g. {@code "2026-12-02 14:05 UTC, 1 GiB, 2 workers"}
     * @param markdown the run's text; its headings move down below the run's heading
     * @param csv the run's rows as CSV, or {@code null}
     * @return the Markdown file
     * @throws UncheckedIOException naming the file that cannot be read or written
     */
    public static Path record(Path dir, String benchmark, String title, String run, String markdown, String csv) {
        String name = benchmark + "-" + machine();
        Path md = dir.resolve(name + ".md");
        Path csvFile = dir.resolve(name + ".csv");
        try {
            String existing = Files.exists(md) ? Files.readString(md, StandardCharsets.UTF_8) : null;
            String previousCsv = Files.exists(csvFile) ? Files.readString(csvFile, StandardCharsets.UTF_8) : null;
            Table.write(md, fold(existing, previousCsv, name, title, run, markdown, csv != null));
            if (csv != null) {
                Table.write(csvFile, csv);
            } else {
                Files.deleteIfExists(csvFile);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot record the run in " + md + ": " + e.getMessage(), e);
        }
        return md;
    }

    /**
     * The file's text with the run recorded (see {@link #record}): {@code existing} (or {@code null}) with its current
     * run moved under {@link #EARLIER}, {@code previousCsv} (or {@code null}) inline there.
     */
    static String fold(
            String existing,
            String previousCsv,
            String name,
            String title,
            String run,
            String markdown,
            boolean hasCsv) {
        List<String> head = new ArrayList<>();
        List<String> current = new ArrayList<>();
        List<String> earlier = new ArrayList<>();
        if (existing == null) {
            head.add("# " + title);
            head.add("");
            head.add(String.format(Locale.ROOT, INTRO, name + ".csv"));
            head.add("");
        } else {
            split(existing, head, current, earlier);
        }
        StringBuilder b = new StringBuilder();
        for (String line : head) {
            b.append(line).append('\n');
        }
        b.append(CURRENT).append("Run ").append(run).append("\n\n");
        if (hasCsv) {
            b.append("Its rows: `").append(name).append(".csv`.\n\n");
        }
        b.append(shift(markdown.strip(), 3, true)).append("\n\n");
        if (!current.isEmpty() || !earlier.isEmpty()) {
            b.append(EARLIER).append("\n\n");
        }
        if (!current.isEmpty()) {
            String heading = current.getFirst();
            b.append("### ")
                    .append(heading.startsWith(CURRENT) ? heading.substring(CURRENT.length()) : "Before " + run)
                    .append("\n\n");
            List<String> body = new ArrayList<>();
            for (String line : current.subList(heading.startsWith(CURRENT) ? 1 : 0, current.size())) {
                if (!line.startsWith("Its rows: `" + name + ".csv`")) {
                    body.add(line);
                }
            }
            b.append(shift(String.join("\n", body).strip(), 1, false)).append("\n\n");
            if (previousCsv != null) {
                b.append("Its rows (were `")
                        .append(name)
                        .append(".csv`):\n\n```csv\n")
                        .append(previousCsv.strip())
                        .append("\n```\n\n");
            }
        }
        for (String line : earlier) {
            b.append(line).append('\n');
        }
        return b.toString().strip() + "\n";
    }

    /** Splits a results file into its head, its current run (from its heading) and what is under Earlier runs. */
    private static void split(String text, List<String> head, List<String> current, List<String> earlier) {
        List<String> target = head;
        boolean fence = false;
        boolean sawRun = false;
        for (String line : text.split("\n", -1)) {
            if (line.startsWith("```")) {
                fence = !fence;
            }
            if (!fence && line.equals(EARLIER)) {
                target = earlier;
                continue;
            }
            if (!fence && !sawRun && (line.startsWith(CURRENT) || line.startsWith("## "))) {
                sawRun = true;
                target = current;
            }
            target.add(line);
        }
        while (!earlier.isEmpty() && earlier.getFirst().isBlank()) {
            earlier.removeFirst();
        }
    }

    /**
     * Moves {@code text}'s headings (outside code fences) down: by {@code levels}, or, with {@code toLevel}, so that
     * the shallowest is at level {@code levels}.
     */
    static String shift(String text, int levels, boolean toLevel) {
        String[] lines = text.split("\n", -1);
        int shallowest = Integer.MAX_VALUE;
        boolean fence = false;
        for (String line : lines) {
            fence ^= line.startsWith("```");
            if (!fence && level(line) > 0) {
                shallowest = Math.min(shallowest, level(line));
            }
        }
        int by = toLevel ? (shallowest == Integer.MAX_VALUE ? 0 : levels - shallowest) : levels;
        StringBuilder b = new StringBuilder();
        fence = false;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            fence ^= line.startsWith("```");
            b.append(!fence && level(line) > 0 && by > 0 ? "#".repeat(by) + line : line);
            if (i + 1 < lines.length) {
                b.append('\n');
            }
        }
        return b.toString();
    }

    private static int level(String line) {
        int n = 0;
        while (n < line.length() && line.charAt(n) == '#') {
            n++;
        }
        return n > 0 && n < line.length() && line.charAt(n) == ' ' ? n : 0;
    }
}
