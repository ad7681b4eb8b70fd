package io.cuwire.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A headless Chromium driven through its DevTools protocol over the JDK's {@link WebSocket}: started with a fresh
 * profile on a free port, one page, {@link #open} a URL and {@link #evaluate} JavaScript in it. Closing stops the
 * browser and the processes it started. Not thread-safe.
 */
final class HeadlessChromium implements AutoCloseable {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final List<String> NAMES =
            List.of("chromium", "chromium-browser", "google-chrome", "google-chrome-stable");

    private final Process process;
    private final WebSocket socket;
    private final AtomicInteger ids = new AtomicInteger();
    /** Replies awaited, by call id; completed by the socket's {@link Listener}. */
    private final Map<Integer, CompletableFuture<Map<String, Object>>> pending;

    /** The browser to run: {@code $CUWIRE_CHROMIUM}, else the first of chromium's usual names on {@code PATH}. */
    static Optional<Path> find() {
        String forced = System.getenv("CUWIRE_CHROMIUM");
        if (forced != null && !forced.isBlank()) {
            return Optional.of(Path.of(forced)).filter(Files::isExecutable);
        }
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            for (String name : NAMES) {
                Path p = Path.of(dir.isEmpty() ? "." : dir, name);
                if (Files.isExecutable(p)) {
                    return Optional.of(p);
                }
            }
        }
        return Optional.empty();
    }

    /** The reason a test skips when {@link #find} finds nothing. */
    static String missing() {
        return "no chromium installed (looked for $CUWIRE_CHROMIUM, then " + String.join(", ", NAMES) + " on PATH; "
                + "Debian: apt-get install chromium, as .ci/run does)";
    }

    private HeadlessChromium(
            Process process, WebSocket socket, Map<Integer, CompletableFuture<Map<String, Object>>> pending) {
        this.process = process;
        this.socket = socket;
        this.pending = pending;
    }

    /**
     * Starts {@code binary} headless with its profile, and its temporary files, in {@code profile} (an empty
     * directory).
     */
    static HeadlessChromium start(Path binary, Path profile) throws IOException, InterruptedException {
        ProcessBuilder b = new ProcessBuilder(
                        binary.toString(),
                        "--headless",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--no-first-run",
                        "--no-default-browser-check",
                        "--disable-extensions",
                        "--hide-scrollbars",
                        "--window-size=1400,1000",
                        "--remote-debugging-port=0",
                        "--user-data-dir=" + profile,
                        "about:blank")
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        b.environment().put("TMPDIR", profile.toString());
        Process p = b.start();
        try {
            URI browser = devToolsAddress(p);
            URI page = pageAddress(browser);
            Map<Integer, CompletableFuture<Map<String, Object>>> pending = new ConcurrentHashMap<>();
            WebSocket ws = HttpClient.newHttpClient()
                    .newWebSocketBuilder()
                    .connectTimeout(TIMEOUT)
                    .buildAsync(page, new Listener(pending))
                    .get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            return new HeadlessChromium(p, ws, pending);
        } catch (IOException | InterruptedException | RuntimeException | ExecutionException | TimeoutException e) {
            stop(p);
            throw e instanceof IOException io ? io : new IOException("chromium did not start: " + e, e);
        }
    }

    /** Reads {@code DevTools listening on ws://...} from the browser's standard error. */
    private static URI devToolsAddress(Process p) throws IOException, InterruptedException {
        CompletableFuture<URI> found = new CompletableFuture<>();
        StringBuilder seen = new StringBuilder();
        Thread reader = Thread.ofPlatform().daemon().name("chromium-stderr").start(() -> {
            try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    int at = line.indexOf("DevTools listening on ");
                    if (at >= 0) {
                        found.complete(URI.create(line.substring(at + "DevTools listening on ".length())
                                .trim()));
                    } else if (!found.isDone() && seen.length() < 4000) {
                        seen.append(line).append('\n');
                    }
                }
            } catch (IOException e) {
                found.completeExceptionally(e);
            }
            found.completeExceptionally(new IOException("chromium exited before it listened; it said:\n" + seen));
        });
        try {
            return found.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new IOException(e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            reader.interrupt();
            throw new IOException(
                    "chromium did not print its DevTools address within " + TIMEOUT + "; it said:\n" + seen, e);
        }
    }

    /** The WebSocket address of the browser's first page, from {@code /json/list}. */
    private static URI pageAddress(URI browser) throws IOException, InterruptedException {
        URI list = URI.create("http://" + browser.getAuthority() + "/json/list");
        String body = HttpClient.newHttpClient()
                .send(HttpRequest.newBuilder(list).timeout(TIMEOUT).build(), HttpResponse.BodyHandlers.ofString())
                .body();
        for (Object target : (List<?>) Json.parse(body)) {
            Map<?, ?> t = (Map<?, ?>) target;
            if ("page".equals(t.get("type"))) {
                return URI.create((String) t.get("webSocketDebuggerUrl"));
            }
        }
        throw new IOException("chromium lists no page at " + list + ": " + body);
    }

    /** Opens {@code url} in the page and waits until it has loaded. */
    void open(URI url) throws IOException, InterruptedException {
        call("Page.navigate", "{\"url\":" + Json.quote(url.toString()) + "}");
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!"complete".equals(evaluate("document.readyState"))) {
            if (System.nanoTime() > deadline) {
                throw new IOException(url + " did not finish loading within " + TIMEOUT);
            }
            Thread.sleep(20);
        }
    }

    /** The value of {@code expression} in the page (a string, number, boolean, or null). */
    Object evaluate(String expression) throws IOException, InterruptedException {
        Map<String, Object> r =
                call("Runtime.evaluate", "{\"expression\":" + Json.quote(expression) + ",\"returnByValue\":true}");
        Map<?, ?> result = (Map<?, ?>) r.get("result");
        if (r.get("exceptionDetails") != null) {
            throw new IOException("the page threw: " + r.get("exceptionDetails"));
        }
        return ((Map<?, ?>) result.get("result")).get("value");
    }

    private Map<String, Object> call(String method, String params) throws IOException, InterruptedException {
        int id = ids.incrementAndGet();
        CompletableFuture<Map<String, Object>> reply = new CompletableFuture<>();
        pending.put(id, reply);
        socket.sendText("{\"id\":" + id + ",\"method\":\"" + method + "\",\"params\":" + params + "}", true);
        Map<String, Object> m;
        try {
            m = reply.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException(method + " got no reply: " + e, e);
        }
        if (m.get("error") != null) {
            throw new IOException(method + " failed: " + m.get("error"));
        }
        return m;
    }

    /** Collects text frames into messages and completes the pending call each reply names. */
    private static final class Listener implements WebSocket.Listener {
        private final Map<Integer, CompletableFuture<Map<String, Object>>> pending;
        private final StringBuilder text = new StringBuilder();

        Listener(Map<Integer, CompletableFuture<Map<String, Object>>> pending) {
            this.pending = pending;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            text.append(data);
            if (last) {
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) Json.parse(text.toString());
                text.setLength(0);
                if (m.get("id") instanceof Double id) {
                    CompletableFuture<Map<String, Object>> f = pending.remove(id.intValue());
                    if (f != null) {
                        f.complete(m);
                    }
                }
            }
            ws.request(1);
            return null;
        }
    }

    /**
     * Asks the browser to quit (it then removes its own temporary files), gives it a few seconds, then stops what is
     * left of it.
     */
    @Override
    public void close() {
        List<ProcessHandle> children = new ArrayList<>(process.descendants().toList());
        try {
            socket.sendText("{\"id\":" + ids.incrementAndGet() + ",\"method\":\"Browser.close\"}", true)
                    .get(5, TimeUnit.SECONDS);
            process.waitFor(5, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // stopped below
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        socket.abort();
        stop(process);
        children.forEach(ProcessHandle::destroy);
    }

    /** Ends {@code p} (politely, then forcibly after five seconds) and the processes it started. */
    private static void stop(Process p) {
        List<ProcessHandle> children = new ArrayList<>(p.descendants().toList());
        p.destroy();
        try {
            if (!p.waitFor(5, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        children.forEach(ProcessHandle::destroy);
    }
}
