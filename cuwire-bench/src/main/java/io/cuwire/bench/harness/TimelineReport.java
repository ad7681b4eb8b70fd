package io.cuwire.bench.harness;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Reads the timelines of a round trip's processes (the files {@code timeline-<pid>.tsv} that the transport writes when
 * {@code -Dcuwire.transport.timeline=<directory>} is set, one per process, stamps on one clock) and prints where a
 * round's time goes: the processes are named {@code A} (the one that called {@code send} first) and {@code B}, ...; a
 * round is what lies between two of {@code A}'s {@code SEND_CALLED} stamps; the rounds taken are the last
 * {@code rounds} before A's last {@code skip} sends ({@code skip} at least 1: the last send may be a goodbye; more to
 * leave out a later phase, as the transfer bench's 4,000 round trips after its transfers). It prints the median
 * round; the commonest sequence of stamps in a round (process and point), with the median gap before each stamp and
 * the median time since the round began,
 * over the rounds that have that sequence; and, over all rounds, each pair of consecutive stamps (whatever the
 * sequence), with how often per round it occurs, its median gap and its share of the rounds' time.
 */
public final class TimelineReport {
    private TimelineReport() {}

    /** A stamp: when, which process, which point. */
    record Stamp(long nanos, String process, String point) {
        String label() {
            return process + ":" + point;
        }
    }

    /** One step of the commonest round: its label, the median gap before it and the median offset from the start. */
    record Step(String label, double gapMicros, double atMicros) {}

    /** The report: rounds taken, how many have the commonest sequence, its steps, and the median round (µs). */
    record Report(
            int rounds,
            int typical,
            List<Step> steps,
            double medianRoundMicros,
            List<String> processes,
            List<Transition> transitions) {}

    /** A pair of consecutive stamps over all rounds: occurrences per round, median gap (µs), share of the time. */
    record Transition(String from, String to, double perRound, double gapMicros, double share) {}

    /** Reads every {@code timeline-*.tsv} of {@code directory} and analyses the last {@code rounds} but one. */
    public static Report analyse(Path directory, int rounds) {
        return analyse(directory, rounds, 1);
    }

    /**
     * Reads every {@code timeline-*.tsv} of {@code directory} and analyses the {@code rounds} before A's last
     * {@code skip} sends.
     */
    public static Report analyse(Path directory, int rounds, int skip) {
        if (rounds < 1 || skip < 1) {
            throw new IllegalArgumentException("rounds: " + rounds + ", skip: " + skip + " (expected: >= 1 each)");
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(directory)) {
            files = s.filter(p -> p.getFileName().toString().matches("timeline-\\d+\\.tsv"))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + directory, e);
        }
        if (files.size() < 2) {
            throw new IllegalArgumentException(directory + " holds " + files.size()
                    + " timeline files; a round trip needs two (timeline-<pid>.tsv, from -Dcuwire.transport.timeline)");
        }
        List<List<Long>> raw = new ArrayList<>();
        List<List<String>> rawPoints = new ArrayList<>();
        List<String> heads = new ArrayList<>();
        for (Path f : files) {
            List<Long> times = new ArrayList<>();
            List<String> points = new ArrayList<>();
            String head = "";
            try {
                for (String line : Files.readAllLines(f)) {
                    if (line.startsWith("#")) {
                        head = line.substring(1).trim();
                        continue;
                    }
                    int tab = line.indexOf('\t');
                    times.add(Long.parseLong(line.substring(0, tab)));
                    points.add(line.substring(tab + 1));
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + f, e);
            }
            raw.add(times);
            rawPoints.add(points);
            heads.add(head);
        }
        // A is the process that called send first
        Integer[] order = new Integer[files.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, Comparator.comparingLong(i -> firstSend(raw.get(i), rawPoints.get(i))));
        List<Stamp> all = new ArrayList<>();
        List<String> processes = new ArrayList<>();
        for (int k = 0; k < order.length; k++) {
            String name = String.valueOf((char) ('A' + k));
            processes.add(name + " = " + heads.get(order[k]));
            List<Long> times = raw.get(order[k]);
            for (int j = 0; j < times.size(); j++) {
                all.add(new Stamp(times.get(j), name, rawPoints.get(order[k]).get(j)));
            }
        }
        all.sort(Comparator.comparingLong(Stamp::nanos));
        List<Integer> starts = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            if (all.get(i).process().equals("A") && all.get(i).point().equals("SEND_CALLED")) {
                starts.add(i);
            }
        }
        if (starts.size() < rounds + skip + 1) {
            throw new IllegalArgumentException("the timelines hold " + Math.max(0, starts.size() - skip - 1)
                    + " complete rounds of A's sends before its last " + skip + "; asked for " + rounds);
        }
        Map<String, List<List<Stamp>>> bySequence = new HashMap<>();
        double[] roundMicros = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            int from = starts.get(starts.size() - rounds - skip - 1 + r);
            int to = starts.get(starts.size() - rounds - skip + r);
            List<Stamp> round = all.subList(from, to);
            roundMicros[r] = (all.get(to).nanos() - all.get(from).nanos()) / 1e3;
            String key = String.join(",", round.stream().map(Stamp::label).toList());
            bySequence.computeIfAbsent(key, k -> new ArrayList<>()).add(round);
        }
        List<List<Stamp>> typical = bySequence.values().stream()
                .max(Comparator.comparingInt(List::size))
                .orElseThrow();
        int n = typical.getFirst().size();
        List<Step> steps = new ArrayList<>();
        for (int s = 0; s < n; s++) {
            double[] gap = new double[typical.size()];
            double[] at = new double[typical.size()];
            for (int r = 0; r < typical.size(); r++) {
                List<Stamp> round = typical.get(r);
                gap[r] = s == 0 ? 0 : (round.get(s).nanos() - round.get(s - 1).nanos()) / 1e3;
                at[r] = (round.get(s).nanos() - round.getFirst().nanos()) / 1e3;
            }
            steps.add(new Step(typical.getFirst().get(s).label(), Stats.median(gap), Stats.median(at)));
        }
        Map<String, List<Double>> gaps = new HashMap<>();
        int first = starts.get(starts.size() - rounds - skip - 1);
        int last = starts.get(starts.size() - skip - 1);
        for (int i = first; i < last; i++) {
            gaps.computeIfAbsent(all.get(i).label() + "\t" + all.get(i + 1).label(), k -> new ArrayList<>())
                    .add((all.get(i + 1).nanos() - all.get(i).nanos()) / 1e3);
        }
        double total = (all.get(last).nanos() - all.get(first).nanos()) / 1e3;
        List<Transition> transitions = new ArrayList<>();
        for (Map.Entry<String, List<Double>> e : gaps.entrySet()) {
            String[] ft = e.getKey().split("\t");
            double[] g = e.getValue().stream().mapToDouble(Double::doubleValue).toArray();
            transitions.add(new Transition(
                    ft[0],
                    ft[1],
                    g.length / (double) rounds,
                    Stats.median(g),
                    Arrays.stream(g).sum() / total));
        }
        transitions.sort(Comparator.comparingDouble(Transition::share).reversed());
        return new Report(rounds, typical.size(), steps, Stats.median(roundMicros), processes, transitions);
    }

    private static long firstSend(List<Long> times, List<String> points) {
        long first = Long.MAX_VALUE;
        for (int j = 0; j < times.size(); j++) {
            if (points.get(j).equals("SEND_CALLED")) {
                first = Math.min(first, times.get(j));
            }
        }
        return first;
    }

    /** Prints {@code report}. */
    public static void print(Report report, PrintStream out) {
        for (String p : report.processes()) {
            out.println(p);
        }
        out.printf(
                Locale.ROOT,
                "%d rounds, median %.1f us; the commonest sequence (%d of them):%n",
                report.rounds(),
                report.medianRoundMicros(),
                report.typical());
        out.printf(Locale.ROOT, "%-22s %10s %10s%n", "stamp", "gap_us", "at_us");
        for (Step s : report.steps()) {
            out.printf(Locale.ROOT, "%-22s %10.1f %10.1f%n", s.label(), s.gapMicros(), s.atMicros());
        }
        out.println("every pair of consecutive stamps, by share of the rounds' time:");
        out.printf(Locale.ROOT, "%-22s %-22s %9s %10s %7s%n", "from", "to", "per_round", "gap_us", "share");
        for (Transition t : report.transitions()) {
            if (t.share() >= 0.005) {
                out.printf(
                        Locale.ROOT,
                        "%-22s %-22s %9.2f %10.1f %6.1f%%%n",
                        t.from(),
                        t.to(),
                        t.perRound(),
                        t.gapMicros(),
                        100 * t.share());
            }
        }
    }

    /** {@code TimelineReport DIRECTORY [ROUNDS]}: prints the report of the timelines in DIRECTORY. */
    public static void main(String[] args) {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: TimelineReport DIRECTORY [ROUNDS (default 1000) [SKIP (default 1)]]");
            System.exit(2);
        }
        print(
                analyse(
                        Path.of(args[0]),
                        args.length > 1 ? Integer.parseInt(args[1]) : 1000,
                        args.length > 2 ? Integer.parseInt(args[2]) : 1),
                System.out);
    }
}
