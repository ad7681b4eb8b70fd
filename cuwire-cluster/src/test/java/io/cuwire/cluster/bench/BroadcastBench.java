package io.cuwire.cluster.bench;

import io.cuwire.cluster.BroadcastOptions;
import io.cuwire.cluster.BroadcastResult;
import io.cuwire.cluster.Client;
import io.cuwire.cluster.LocalCluster;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.serialize.Family;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Broadcast of one model to N workers, each in turn vs down a chain, median of repeats. Arguments:
 * {@code workers mib repeats}. Prints one markdown table row per strategy and family.
 */
public final class BroadcastBench {
    private BroadcastBench() {}

    public static void main(String[] args) {
        int workers = Integer.parseInt(args[0]);
        long mib = Long.parseLong(args[1]);
        int repeats = Integer.parseInt(args[2]);
        try (LocalCluster cluster = LocalCluster.builder().workers(workers).start()) {
            Client client = cluster.client();
            long rows = (mib << 20) / (64 * 4);
            try (NdArray x = NdArray.zeros(client.memory(), DType.FLOAT32, Order.C, rows, 64)) {
                for (Family family : new Family[] {Family.CUDA, Family.HOST}) {
                    for (BroadcastOptions.Strategy s : BroadcastOptions.Strategy.values()) {
                        List<Double> ms = new ArrayList<>();
                        long bytes = 0;
                        for (int r = 0; r <= repeats; r++) {
                            try (NearestNeighbors model = new NearestNeighbors().fit(x)) {
                                BroadcastResult b = client.broadcast(
                                        model,
                                        BroadcastOptions.DEFAULT.family(family).strategy(s));
                                if (r > 0) {
                                    ms.add(b.nanos() / 1e6);
                                }
                                bytes = b.clientBytes();
                            }
                        }
                        double[] sorted = ms.stream()
                                .mapToDouble(Double::doubleValue)
                                .sorted()
                                .toArray();
                        double median = sorted[sorted.length / 2];
                        System.out.printf(
                                Locale.ROOT,
                                "| %d | %d MiB | %s | %s | %.0f | %.0f–%.0f | %.1f | %.2f |%n",
                                workers,
                                mib,
                                family.wireName(),
                                s,
                                median,
                                sorted[0],
                                sorted[sorted.length - 1],
                                bytes / 1048576.0,
                                workers * (double) (mib << 20) / (median / 1e3) / 1e9);
                        System.out.flush();
                    }
                }
            }
            System.out.println("runs: " + Arrays.toString(new int[] {workers, repeats}));
        }
    }
}
