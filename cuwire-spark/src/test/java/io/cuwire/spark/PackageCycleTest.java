package io.cuwire.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * The packages of cuwire-spark's compiled classes, as the JDK's {@code jdeps -verbose:package} reads them, depend on
 * each other without a cycle: the public packages use {@code internal}, never the other way round.
 */
class PackageCycleTest {
    private static final Pattern EDGE = Pattern.compile("^\\s+(io\\.cuwire\\.spark[\\w.]*)\\s+->\\s+"
            + "(io\\.cuwire\\.spark[\\w.]*)\\s");

    @Test
    void shouldFindNoCycleBetweenTheModulesPackages() throws Exception {
        Path classes = Path.of(ModelRef.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Map<String, Set<String>> uses = dependencies(classes);
        assertTrue(uses.getOrDefault("io.cuwire.spark", Set.of()).contains("io.cuwire.spark.internal"),
                "jdeps read the classes (the public package uses internal): " + uses);
        assertEquals(List.of(), cycles(uses), "package cycles in " + classes);
    }

    @Test
    void shouldReportACycleWhereThereIsOne() {
        Map<String, Set<String>> uses = new TreeMap<>(Map.of("a", Set.of("b"), "b", Set.of("c"), "c", Set.of("a"),
                "d", Set.of("a")));
        assertEquals(List.of(List.of("a", "b", "c", "a")), cycles(uses));
    }

    /** Package to the other packages of the module that it uses. */
    private static Map<String, Set<String>> dependencies(Path classes) {
        ToolProvider jdeps = ToolProvider.findFirst("jdeps").orElseThrow();
        StringWriter out = new StringWriter();
        int rc = jdeps.run(new PrintWriter(out), new PrintWriter(out), "-verbose:package", "-filter:none",
                classes.toString());
        assertEquals(0, rc, "jdeps: " + out);
        Map<String, Set<String>> uses = new TreeMap<>();
        for (String line : out.toString().split("\n")) {
            Matcher m = EDGE.matcher(line);
            if (m.find() && !m.group(1).equals(m.group(2))) {
                uses.computeIfAbsent(m.group(1), k -> new TreeSet<>()).add(m.group(2));
            }
        }
        return uses;
    }

    /** Each cycle found by a depth-first walk, as the path that closes it; none if the graph is acyclic. */
    private static List<List<String>> cycles(Map<String, Set<String>> uses) {
        List<List<String>> found = new ArrayList<>();
        Set<String> done = new TreeSet<>();
        for (String p : uses.keySet()) {
            walk(p, uses, new ArrayList<>(), done, found);
        }
        return found;
    }

    private static void walk(String p, Map<String, Set<String>> uses, List<String> path, Set<String> done,
            List<List<String>> found) {
        int at = path.indexOf(p);
        if (at >= 0) {
            List<String> cycle = new ArrayList<>(path.subList(at, path.size()));
            cycle.add(p);
            found.add(cycle);
            return;
        }
        if (!done.add(p)) {
            return;
        }
        path.add(p);
        for (String q : uses.getOrDefault(p, Set.of())) {
            walk(q, uses, path, done, found);
        }
        path.removeLast();
    }
}
