package io.cuwire.transport.readme;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.serialize.Limits;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.internal.RefusalLog;
import io.cuwire.transport.internal.SessionKeys;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README's "Security" section checked against the code where it names settings, defaults and tests: each bound
 * in its two tables is a {@link TransportConfig} or {@link Limits} setting whose default is the one stated, every
 * test it cites exists, and the figures it gives of the tag, the refusal log and the {@code java} family's depth are
 * the code's.
 */
class ReadmeSecurityClaimsTest {
    private static final Path README = Path.of("../README.md");
    private static final Pattern CODE = Pattern.compile("`([^`]+)`");
    private static final Pattern TEST = Pattern.compile("`([A-Z][A-Za-z]*Test)`");
    private static final Pattern AMOUNT = Pattern.compile("(\\d+) ?(s|KiB|MiB|GiB|TiB|MiB/s)?");

    /** The lines of the README's "Security" section. */
    private static List<String> section() throws IOException {
        assumeTrue(Files.exists(README), "reads the README: runs from the cuwire-transport module of a checkout");
        List<String> out = new ArrayList<>();
        boolean in = false;
        for (String line : Files.readAllLines(README, StandardCharsets.UTF_8)) {
            if (line.startsWith("## ")) {
                in = line.equals("## Security");
            } else if (in) {
                out.add(line);
            }
        }
        assertFalse(out.isEmpty(), "the README has a Security section");
        return out;
    }

    /** The rows {@code [bound, setting, default]} of every table whose header is {@code | bound | setting | ...}. */
    private static List<String[]> bounds(List<String> lines) {
        List<String[]> rows = new ArrayList<>();
        boolean in = false;
        for (String line : lines) {
            if (line.startsWith("| bound | setting | default |")) {
                in = true;
            } else if (in && line.startsWith("|---")) {
                continue;
            } else if (in && line.startsWith("|")) {
                String[] cells = line.substring(1, line.length() - 1).split("\\|", -1);
                rows.add(Arrays.stream(cells).map(String::strip).toArray(String[]::new));
            } else {
                in = false;
            }
        }
        return rows;
    }

    /** A default as the README writes it: a count, seconds, or bytes (per second) in binary units. */
    private static long amount(String text) {
        Matcher m = AMOUNT.matcher(text);
        assertTrue(m.matches(), "a default the test reads: " + text);
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "" : m.group(2);
        return switch (unit) {
            case "KiB" -> n << 10;
            case "MiB", "MiB/s" -> n << 20;
            case "GiB" -> n << 30;
            case "TiB" -> n << 40;
            default -> n;
        };
    }

    /** The default of {@code setting}: a {@link TransportConfig} getter's, else a {@link Limits#DEFAULT} one's. */
    private static long codeDefault(String setting) throws ReflectiveOperationException {
        TransportConfig config = TransportConfig.builder()
                .allowUnauthenticated(true)
                .receiveInto(d -> {
                    throw new UnsupportedOperationException();
                })
                .build();
        Object value;
        try {
            Method m = TransportConfig.class.getMethod(setting);
            value = m.invoke(config);
        } catch (NoSuchMethodException e) {
            value = Limits.class.getMethod(setting).invoke(Limits.DEFAULT);
        }
        return value instanceof Duration d ? d.toSeconds() : ((Number) value).longValue();
    }

    @Test
    void shouldStateEachBoundsDefaultAsTheCodeHasIt() throws Exception {
        List<String[]> rows = bounds(section());
        assertTrue(rows.size() >= 12, "both tables were read: " + rows.size() + " rows");
        for (String[] row : rows) {
            Matcher setting = CODE.matcher(row[1]);
            assertTrue(setting.matches(), "the setting of '" + row[0] + "' is one code span: " + row[1]);
            assertEquals(codeDefault(setting.group(1)), amount(row[2]), "the default of " + row[1]);
        }
    }

    @Test
    void shouldCiteOnlyTestsThatExist() throws Exception {
        List<String> cited = new ArrayList<>();
        for (String line : section()) {
            Matcher m = TEST.matcher(line);
            while (m.find()) {
                cited.add(m.group(1));
            }
        }
        assertTrue(cited.size() >= 6, "the section cites its tests: " + cited);
        List<String> files;
        try (Stream<Path> walk = Files.walk(Path.of(".."))) {
            files = walk.filter(p -> p.toString().contains("src/test/java"))
                    .map(p -> p.getFileName().toString())
                    .toList();
        }
        for (String test : cited) {
            assertTrue(files.contains(test + ".java"), "the README cites " + test + ", which exists");
        }
    }

    @Test
    void shouldGiveTheTagTheRefusalLogAndTheJavaFamilysDepthAsTheCodeHasThem() throws Exception {
        String text = String.join("\n", section());
        assertTrue(text.contains("carry a " + SessionKeys.TAG_BYTES + "-byte tag"), "the tag's size");
        assertTrue(text.contains("logged once on `" + RefusalLog.LOGGER + "`"), "the refusal log's logger");
        Field depth = Class.forName("io.cuwire.serialize.JavaFamily").getDeclaredField("MAX_DEPTH");
        depth.setAccessible(true);
        assertTrue(text.contains("at most " + depth.getInt(null) + " levels deep"), "the java family's depth");
        assertEquals(1L << 27, Limits.DEFAULT_DECODE_WORK, "the section calls the decode budget 2^27");
        assertTrue(text.contains("2^27"), "the decode budget as a power of two");
    }
}
