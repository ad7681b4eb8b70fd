package io.cuwire.cli;

import io.cuwire.bench.harness.Cli;
import io.cuwire.cluster.StandaloneWorker;
import io.cuwire.cluster.WorkerExit;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * {@code cuwire worker}: starts a cluster worker by hand, for clusters assembled on one host. The secret (hex, at
 * least 16 bytes) comes from {@code CUWIRE_SECRET} or else the first line of standard input, never the command line.
 * Its exit code says why it stopped ({@link WorkerExit}; {@code --help} lists them, {@link #exitCodes}).
 */
final class WorkerCommand {
    static final String SECRET_VARIABLE = "CUWIRE_SECRET";

    private WorkerCommand() {}

    /** The options of {@code cuwire worker}, declared to picocli (the command mixes them in). */
    static final class Args {
        @Option(
                names = "--listen",
                paramLabel = "ADDRESS",
                defaultValue = "tcp://127.0.0.1:0",
                description = "where to listen, tcp://host:port (port 0: any) (default: ${DEFAULT-VALUE})")
        String listen;

        @Option(
                names = "--device",
                paramLabel = "N",
                defaultValue = "0",
                description = "the device the worker's models live on (default: ${DEFAULT-VALUE})")
        int device;

        @Option(
                names = "--index",
                paramLabel = "N",
                defaultValue = "0",
                description = "the worker's index in its cluster (default: ${DEFAULT-VALUE})")
        int index;
    }

    /** The help's footer: every exit code and its meaning. */
    static String[] exitCodes() {
        List<String> lines = new ArrayList<>(List.of("", "exit codes:"));
        for (WorkerExit e : WorkerExit.values()) {
            lines.add(String.format(Locale.ROOT, "  %d  %s", e.code(), e.meaning()));
        }
        return lines.toArray(String[]::new);
    }

    /** Starts the worker with {@code args}, its secret from {@code secretVariable} or else {@code in}. */
    static int run(Args args, String secretVariable, InputStream in, PrintStream out, PrintStream err) {
        try {
            Cli.atLeast("--device", args.device, 0);
            Cli.atLeast("--index", args.index, 0);
            StandaloneWorker.checkDevice(args.device);
        } catch (IllegalArgumentException e) {
            err.println("cuwire worker: " + e.getMessage());
            return Main.USAGE;
        }
        byte[] secret;
        try {
            String hex = secretVariable;
            if (hex == null || hex.isBlank()) {
                hex = new BufferedReader(new InputStreamReader(in, StandardCharsets.US_ASCII)).readLine();
            }
            if (hex == null || hex.isBlank()) {
                throw new IllegalArgumentException(
                        "no cluster secret: set " + SECRET_VARIABLE + " or write it (hex)" + " on standard input");
            }
            secret = HexFormat.of().parseHex(hex.strip());
            if (secret.length < 16) {
                throw new IllegalArgumentException(
                        "the cluster secret has " + secret.length + " bytes (expected: " + ">= 16, as hex)");
            }
        } catch (IOException | IllegalArgumentException e) {
            err.println("cuwire worker: " + e.getMessage());
            return Main.USAGE;
        }
        try {
            StandaloneWorker.serve(args.index, args.device, args.listen, secret, out);
        } catch (RuntimeException e) {
            err.println("cuwire worker: cannot start: " + e.getMessage());
            return WorkerExit.START_FAILED.code();
        }
        return Main.OK;
    }
}
