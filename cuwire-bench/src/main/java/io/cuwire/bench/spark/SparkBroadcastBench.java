package io.cuwire.bench.spark;

import io.cuwire.bench.harness.Results;
import io.cuwire.bench.harness.Sizes;
import io.cuwire.bench.harness.Stats;
import io.cuwire.bench.harness.Table;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.NdArray;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.ModelBroadcast;
import io.cuwire.spark.ModelRef;
import io.cuwire.spark.NodeStats;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;

/**
 * {@code cuwire bench spark-broadcast}: the time to make one model of each {@code --sizes} (float64 values) available
 * on every executor, the cuwire handle ({@code CuwireSpark.broadcast} of an {@code NdArray} in the driver endpoint's
 * device memory; frames fetched over cuwire's TCP transport, the first executor from the driver, every later one from
 * an executor) against {@code sc.broadcast} of the same values as a {@code double[]} with Kryo (TorrentBroadcast), in
 * the same application, {@code --rounds} rounds each, alternating. A round is timed on the driver from the broadcast
 * call until a job of {@code --tasks} tasks has read the model's size in the executors; each cuwire round checks that
 * every executor fetched once and exactly one of them from the driver, and prints the executors' copy counters. A side
 * that fails (a 4 GiB {@code double[]} that an executor's heap cannot hold) is recorded as failed with its error, and
 * the other side still runs.
 */
public final class SparkBroadcastBench {
    private SparkBroadcastBench() {}

    /**
     * One size's rounds: each side's seconds, or why it failed.
     *
     * @param bytes the model's size
     * @param cuwire the cuwire handle's seconds per round
     * @param spark {@code sc.broadcast}'s seconds per round
     * @param cuwireFailed why the handle failed, or {@code null}
     * @param sparkFailed why {@code sc.broadcast} failed, or {@code null}
     */
    public record Result(
            long bytes, List<Double> cuwire, List<Double> spark, String cuwireFailed, String sparkFailed) {}

    /** Runs every size in an application of its own options; records the run with {@code --out}. */
    public static List<Result> run(SparkBroadcastArgs.Options o, PrintStream out) {
        SparkSession spark =
                SparkBenchSession.start("cuwire-bench-spark-broadcast", o.master(), o.conf(), o.executors());
        try {
            List<Result> results = new ArrayList<>();
            JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
            out.printf("INFO master=%s executors=%s spark=%s%n", o.master(), CuwireSpark.executors(), spark.version());
            for (long bytes : o.sizes()) {
                results.add(size(jsc, bytes, o, out));
            }
            if (o.out() != null) {
                record(o, spark, results);
            }
            return results;
        } finally {
            spark.stop();
        }
    }

    private static Result size(JavaSparkContext jsc, long bytes, SparkBroadcastArgs.Options o, PrintStream out) {
        int n = (int) (bytes / 8);
        double[] values = new double[n];
        for (int i = 0; i < n; i++) {
            values[i] = i;
        }
        List<Integer> tasks = new ArrayList<>();
        for (int i = 0; i < o.tasks(); i++) {
            tasks.add(i);
        }
        List<Double> cuwire = new ArrayList<>();
        List<Double> spark = new ArrayList<>();
        String cuwireFailed = null;
        String sparkFailed = null;
        try (NdArray model = NdArray.fromArray(CuwireSpark.deviceMemory(), values, n)) {
            for (int round = 1; round <= o.rounds(); round++) {
                if (cuwireFailed == null) {
                    try {
                        cuwire.add(cuwireRound(jsc, model, tasks, o.executors(), round, bytes, out));
                    } catch (RuntimeException e) {
                        cuwireFailed = e.toString();
                        out.println("FAILED cuwire handle " + Sizes.format(bytes) + ": " + e);
                    }
                }
                if (sparkFailed == null) {
                    try {
                        spark.add(sparkRound(jsc, values, tasks, round, bytes, out));
                    } catch (RuntimeException e) {
                        sparkFailed = e.toString();
                        out.println("FAILED sc.broadcast " + Sizes.format(bytes) + ": " + e);
                    }
                }
            }
        }
        return new Result(bytes, List.copyOf(cuwire), List.copyOf(spark), cuwireFailed, sparkFailed);
    }

    private static double cuwireRound(
            JavaSparkContext jsc,
            NdArray model,
            List<Integer> tasks,
            int executors,
            int round,
            long bytes,
            PrintStream out) {
        CuwireSpark.executorStats(true);
        long t0 = System.nanoTime();
        try (ModelBroadcast<NdArray> b = CuwireSpark.broadcast(model)) {
            ModelRef<NdArray> ref = b.ref();
            List<String> seen = jsc.parallelize(tasks, tasks.size())
                    .map(i -> SparkEnv.get().executorId() + "=" + ref.apply(NdArray::byteSize))
                    .collect();
            double s = (System.nanoTime() - t0) / 1e9;
            long fetched = 0;
            long fromDriver = 0;
            StringBuilder copies = new StringBuilder();
            for (NodeStats st : CuwireSpark.executorStats(true)) {
                fetched += st.fetched();
                fromDriver += st.fetchedFromDriver();
                copies.append(String.format(
                        Locale.ROOT,
                        " | exec %s (%s): from driver %d, from peers %d, H2D %.0f MiB, D2H %.0f MiB, H2H %.0f MiB",
                        st.executorId(),
                        st.device(),
                        st.fetchedFromDriver(),
                        st.fetchedFromPeers(),
                        st.copied(CopyDirection.H2D) / 1048576.0,
                        st.copied(CopyDirection.D2H) / 1048576.0,
                        st.copied(CopyDirection.H2H) / 1048576.0));
            }
            if (fetched != executors || fromDriver != 1) {
                throw new IllegalStateException("expected each of " + executors + " executors to fetch once, one of "
                        + "them from the driver; counted " + fetched + " fetches, " + fromDriver + " from the driver ("
                        + seen + ")" + copies);
            }
            out.printf(
                    Locale.ROOT,
                    "ROUND size=%s round=%d side=cuwire s=%.3f gb_s_per_executor=%.2f%s%n",
                    Sizes.format(bytes),
                    round,
                    s,
                    bytes / s / 1e9,
                    copies);
            return s;
        }
    }

    private static double sparkRound(
            JavaSparkContext jsc, double[] values, List<Integer> tasks, int round, long bytes, PrintStream out) {
        long t0 = System.nanoTime();
        Broadcast<double[]> bc = jsc.broadcast(values);
        try {
            List<String> seen = jsc.parallelize(tasks, tasks.size())
                    .map(i -> SparkEnv.get().executorId() + "=" + bc.value().length)
                    .collect();
            double s = (System.nanoTime() - t0) / 1e9;
            out.printf(
                    Locale.ROOT,
                    "ROUND size=%s round=%d side=sc.broadcast s=%.3f gb_s_per_executor=%.2f %s%n",
                    Sizes.format(bytes),
                    round,
                    s,
                    bytes / s / 1e9,
                    seen);
            return s;
        } finally {
            bc.destroy();
        }
    }

    private static void record(SparkBroadcastArgs.Options o, SparkSession spark, List<Result> results) {
        Table csv = new Table("size", "side", "round", "seconds");
        Table md = new Table(
                "size",
                "cuwire handle (median, min–max)",
                "`sc.broadcast` Kryo (median, min–max)",
                "handle / broadcast");
        for (Result r : results) {
            String size = Sizes.format(r.bytes());
            for (int i = 0; i < r.cuwire().size(); i++) {
                csv.row(size, "cuwire", i + 1, Table.num(r.cuwire().get(i), 3));
            }
            for (int i = 0; i < r.spark().size(); i++) {
                csv.row(size, "sc.broadcast", i + 1, Table.num(r.spark().get(i), 3));
            }
            String ratio = r.cuwire().isEmpty() || r.spark().isEmpty()
                    ? ""
                    : Table.num(median(r.cuwire()) / median(r.spark()), 2) + " ×";
            md.row(size, cell(r.cuwire(), r.cuwireFailed()), cell(r.spark(), r.sparkFailed()), ratio);
        }
        String text = "### Spark: a model on every executor — cuwire handle vs `sc.broadcast` (Kryo)\n\n"
                + String.format(
                        Locale.ROOT,
                        "**How.** `cuwire bench spark-broadcast --master %s --rounds %d --tasks %d`%s: Spark %s, JDK "
                                + "%s, %d executors (%s), %d cores seen by the driver. A round: the broadcast call "
                                + "until a job of %d tasks read the model's size on the executors; cuwire's rounds "
                                + "checked that each executor fetched once, one of them from the driver.\n\n",
                        o.master(),
                        o.rounds(),
                        o.tasks(),
                        o.conf().isEmpty() ? "" : " with `--conf` " + String.join(", ", o.conf()),
                        spark.version(),
                        Runtime.version(),
                        o.executors(),
                        CuwireSpark.executorStats(false).stream()
                                .map(s -> s.executorId() + " on " + s.device())
                                .toList(),
                        Runtime.getRuntime().availableProcessors(),
                        o.tasks())
                + md.markdown();
        Path file = Results.record(
                o.out(),
                "spark-broadcast",
                "`cuwire bench spark-broadcast` on " + Results.machine(),
                Results.now() + ", " + o.master() + (o.note() == null ? "" : ", " + o.note()),
                text,
                csv.csv());
        System.out.println("recorded in " + file);
    }

    private static double median(List<Double> v) {
        return Stats.median(v.stream().mapToDouble(Double::doubleValue).toArray());
    }

    private static String cell(List<Double> v, String failed) {
        if (v.isEmpty()) {
            return failed == null ? "" : "failed: " + failed;
        }
        Stats s = Stats.of(v.stream().mapToDouble(Double::doubleValue).toArray());
        return String.format(Locale.ROOT, "%.3f s (%.3f–%.3f)", s.median(), s.min(), s.max())
                + (failed == null ? "" : "; then failed: " + failed);
    }
}
