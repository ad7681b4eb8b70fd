package io.cuwire.test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * The child of {@link ChildJvmTest}: prints its property, environment (and whether it has a {@code PATH}) and
 * arguments, echoes its input, exits.
 */
public final class EchoChild {
    private EchoChild() {}

    /** {@code args[0]}: the exit code; the rest are printed. */
    public static void main(String[] args) throws Exception {
        System.out.println("property " + System.getProperty("cuwire.test.echo"));
        System.out.println("env " + System.getenv("CUWIRE_TEST_ECHO"));
        System.out.println("PATH set " + (System.getenv("PATH") != null));
        System.err.println("args " + String.join(",", args));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY " + in.readLine());
        System.exit(Integer.parseInt(args[0]));
    }
}
