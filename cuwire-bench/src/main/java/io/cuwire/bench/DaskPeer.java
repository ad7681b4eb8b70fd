package io.cuwire.bench;

import io.cuwire.bench.harness.Scripts;
import io.cuwire.test.SklearnPython;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Dask's {@code scatter} beside cuwire in {@code cuwire bench model-transfer} (the path {@code dask-scatter}): a
 * Python process running {@code dask_peer.py} (a resource of this package) with a client and one Dask worker process
 * of its own on loopback, driven over its standard input, one batch of scatters per command, and timing them on its
 * own clock. The interpreter is {@link SklearnPython#python()} (the one every Python peer of the benches uses), which
 * must import {@code distributed} (Debian: {@code python3-distributed}).
 */
final class DaskPeer implements AutoCloseable {
    static final String SCRIPT = "dask_peer.py";

    /** How long the cluster may take to start, and a batch of scatters to finish. */
    private static final long WAIT_SECONDS = 300;

    private final Process process;
    private final BufferedReader answers;
    private final Writer commands;
    private final Path dir;
    private final String versions;

    private DaskPeer(Process process, Path dir) throws IOException {
        this.process = process;
        this.dir = dir;
        this.answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        String ready = answer("READY ");
        this.versions = ready.substring("READY ".length());
    }

    /** Why Dask cannot run here ({@link SklearnPython#python()} does not import {@code distributed}), or empty. */
    static Optional<String> unavailable() {
        return SklearnPython.cannotImport("distributed, numpy", "distributed (Debian: python3-distributed)");
    }

    /**
     * Starts the peer for arrays of {@code bytes} bytes and waits until its cluster is up.
     *
     * @throws IOException naming the interpreter and the script's last words if it cannot start or its cluster
     *     does not come up
     */
    static DaskPeer start(long bytes) throws IOException {
        Path dir = Files.createTempDirectory("cuwire-dask-peer-");
        Path script = Scripts.write(DaskPeer.class, SCRIPT, dir);
        Process p = new ProcessBuilder(SklearnPython.python(), script.toString(), Long.toString(bytes))
                .directory(dir.toFile())
                .redirectError(dir.resolve("stderr.txt").toFile())
                .start();
        try {
            return new DaskPeer(p, dir);
        } catch (IOException | RuntimeException e) {
            p.destroyForcibly();
            throw e;
        }
    }

    /** The versions the peer runs: {@code dask=… distributed=… numpy=…}. */
    String versions() {
        return versions;
    }

    /**
     * Makes {@code n} scatters and returns their total time in ns, as the peer measured it.
     *
     * @throws IOException if the peer ended or answered something else, with its standard error's end
     */
    long scatter(int n) throws IOException {
        commands.write(n + "\n");
        commands.flush();
        String done = answer("DONE ns=");
        return Long.parseLong(done.substring("DONE ns=".length()));
    }

    /** The peer's next line, which must start with {@code prefix}. */
    private String answer(String prefix) throws IOException {
        String line = answers.readLine();
        if (line == null || !line.startsWith(prefix)) {
            throw new IOException("the Dask peer (" + SklearnPython.python() + " " + SCRIPT + ") answered "
                    + (line == null ? "nothing (it ended)" : "'" + line + "'") + " where '" + prefix
                    + "…' was due" + stderrEnd());
        }
        return line;
    }

    private String stderrEnd() {
        try {
            Path err = dir.resolve("stderr.txt");
            String s = Files.exists(err)
                    ? Files.readString(err, StandardCharsets.UTF_8).strip()
                    : "";
            return s.isEmpty() ? "" : "; its standard error ends: " + s.substring(s.lastIndexOf('\n') + 1);
        } catch (IOException e) {
            return "";
        }
    }

    /** Asks the peer to close its cluster and exit; ends it by force after 30 s. */
    @Override
    public void close() {
        try {
            commands.write("EXIT\n");
            commands.flush();
        } catch (IOException e) {
            // it ended already: nothing to ask
        }
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        for (String f : new String[] {SCRIPT, "stderr.txt"}) {
            dir.resolve(f).toFile().delete();
        }
        dir.toFile().delete();
    }
}
