package io.cuwire.cli;

import io.cuwire.cluster.StandaloneWorker;
import io.cuwire.cluster.WorkerExit;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;

/**
 * {@code cuwire worker}: starts a cluster worker by hand, for clusters assembled on one host. The secret (hex, at
 * least 16 bytes) comes from {@code CUWIRE_SECRET} or else the first line of standard input, never the command line.
 * Its exit code says why it stopped ({@link WorkerExit}; {@code --help} lists them).
 */
final class WorkerCommand {
    static final String SECRET_VARIABLE = "CUWIRE_SECRET";

    private WorkerCommand() {
    }

    static int run(List<String> args, PrintStream out, PrintStream err) {
        return run(args, System.getenv(SECRET_VARIABLE), System.in, out, err);
    }

    static int run(List<String> args, String secretVariable, InputStream in, PrintStream out, PrintStream err) {
        if (args.size() == 1 && (args.getFirst().equals("--help") || args.getFirst().equals("-h"))) {
            help(out);
            return Main.OK;
        }
        String listen = "tcp://127.0.0.1:0";
        int device = 0;
        int index = 0;
        try {
            for (int i = 0; i < args.size(); i++) {
                String a = args.get(i);
                if (i + 1 >= args.size()) {
                    throw new IllegalArgumentException("option " + a + " needs a value (or is unknown)");
                }
                String v = args.get(++i);
                switch (a) {
                    case "--listen" -> listen = v;
                    case "--device" -> device = nonNegative(a, v);
                    case "--index" -> index = nonNegative(a, v);
                    default -> throw new IllegalArgumentException("unknown option " + a + " (expected: --listen "
                            + "ADDRESS, --device N, --index N)");
                }
            }
            StandaloneWorker.checkDevice(device);
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
                throw new IllegalArgumentException("no cluster secret: set " + SECRET_VARIABLE + " or write it (hex)"
                        + " on standard input");
            }
            secret = HexFormat.of().parseHex(hex.strip());
            if (secret.length < 16) {
                throw new IllegalArgumentException("the cluster secret has " + secret.length + " bytes (expected: "
                        + ">= 16, as hex)");
            }
        } catch (IOException | IllegalArgumentException e) {
            err.println("cuwire worker: " + e.getMessage());
            return Main.USAGE;
        }
        try {
            StandaloneWorker.serve(index, device, listen, secret, out);
        } catch (RuntimeException e) {
            err.println("cuwire worker: cannot start: " + e.getMessage());
            return WorkerExit.START_FAILED.code();
        }
        return Main.OK;
    }

    /** The usage, with the exit codes. */
    static void help(PrintStream out) {
        out.println("usage: cuwire worker [--listen tcp://127.0.0.1:0] [--device N] [--index N]");
        out.println();
        out.println("Starts a cluster worker: prints '" + StandaloneWorker.LISTENING + " ADDRESS', serves the first "
                + "client that");
        out.println("authenticates with the cluster secret (hex, at least 16 bytes, from " + SECRET_VARIABLE
                + " or else the first");
        out.println("line of standard input) and exits when that client goes or closes the cluster. It logs why it "
                + "stopped,");
        out.println("and each connection or peer it refused (rate-limited), on standard error.");
        out.println();
        out.println("exit codes:");
        for (WorkerExit e : WorkerExit.values()) {
            out.printf("  %d  %s%n", e.code(), e.meaning());
        }
    }

    private static int nonNegative(String option, String value) {
        try {
            int n = Integer.parseInt(value);
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " " + value + " (expected: a whole number >= 0)");
    }
}
