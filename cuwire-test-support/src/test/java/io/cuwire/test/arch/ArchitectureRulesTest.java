package io.cuwire.test.arch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each architecture rule fails on classes that break it, and passes the same classes without the breach: the
 * classes are compiled here from the sources below into two class path roots (two "modules", {@code a} and
 * {@code b}), a third, {@code bench}, for the bench harness, and a fourth, {@code a-tests}, for test classes.
 */
class ArchitectureRulesTest {
    /** Module a: its API uses b's internal class (the breach), a cycle within a, and a class that only uses b's API. */
    private static final Map<String, String> MODULE_A = Map.of(
            "io/cuwire/fixa/UsesInternal.java", """
                    package io.cuwire.fixa;
                    public class UsesInternal {
                        io.cuwire.fixb.internal.Impl impl = new io.cuwire.fixb.internal.Impl();
                    }
                    """,
            "io/cuwire/fixa/Clean.java", """
                    package io.cuwire.fixa;
                    public class Clean { io.cuwire.fixb.Api api; }
                    """,
            "io/cuwire/fixa/one/First.java", """
                    package io.cuwire.fixa.one;
                    public class First { io.cuwire.fixa.two.Second second; }
                    """,
            "io/cuwire/fixa/two/Second.java", """
                    package io.cuwire.fixa.two;
                    public class Second { io.cuwire.fixa.one.First first; }
                    """,
            "io/cuwire/fixa/internal/Own.java", """
                    package io.cuwire.fixa.internal;
                    public class Own { }
                    """,
            "io/cuwire/fixa/UsesOwnInternal.java", """
                    package io.cuwire.fixa;
                    public class UsesOwnInternal { io.cuwire.fixa.internal.Own own; }
                    """,
            "io/cuwire/fixa/CopyBench.java", """
                    package io.cuwire.fixa;
                    public class CopyBench { }
                    """,
            "io/cuwire/fixa/Timed.java", """
                    package io.cuwire.fixa;
                    public class Timed { io.cuwire.bench.harness.Runner runner; }
                    """,
            "io/cuwire/fixa/split/Left.java", """
                    package io.cuwire.fixa.split;
                    public class Left { io.cuwire.fixb.Back back; }
                    """);
    /**
     * Module b: an API and its SPI (which name each other: not a cycle, x.spi counts as x), an internal class, and a
     * class that uses a's package back (a cycle across the modules).
     */
    private static final Map<String, String> MODULE_B = Map.of(
            "io/cuwire/fixb/Api.java", """
                    package io.cuwire.fixb;
                    public class Api { io.cuwire.fixb.spi.Provider provider; }
                    """,
            "io/cuwire/fixb/spi/Provider.java", """
                    package io.cuwire.fixb.spi;
                    public interface Provider { io.cuwire.fixb.Api open(); }
                    """,
            "io/cuwire/fixb/internal/Impl.java", """
                    package io.cuwire.fixb.internal;
                    public class Impl { }
                    """,
            "io/cuwire/fixb/Back.java", """
                    package io.cuwire.fixb;
                    public class Back { io.cuwire.fixa.split.Left left; }
                    """);
    /** Module a's test classes: one whose test methods are named {@code should…}, one whose are not. */
    private static final Map<String, String> MODULE_A_TESTS = Map.of(
            "io/cuwire/fixa/SumTest.java", """
                    package io.cuwire.fixa;
                    import org.junit.jupiter.api.BeforeEach;
                    import org.junit.jupiter.api.Test;
                    public class SumTest {
                        @BeforeEach void openTheAbacus() { }
                        @Test void shouldAddUp() { }
                        static int[] rows() { return new int[] {1}; }
                    }
                    """,
            "io/cuwire/fixa/LooseTest.java", """
                    package io.cuwire.fixa;
                    import org.junit.jupiter.api.Test;
                    import org.junit.jupiter.params.ParameterizedTest;
                    import org.junit.jupiter.params.provider.ValueSource;
                    public class LooseTest {
                        @Test void checksTheSum() { }
                        @ParameterizedTest @ValueSource(ints = 1) void sumsInRows(int n) { }
                    }
                    """);

    private static final Map<String, String> MODULE_BENCH = Map.of("io/cuwire/bench/harness/Runner.java", """
                    package io.cuwire.bench.harness;
                    public class Runner { }
                    """);

    @TempDir
    static Path dir;

    private static JavaClasses all;
    private static Path a;
    private static JavaClasses aTests;

    @BeforeAll
    static void compileTheFixture() throws IOException {
        Path src = dir.resolve("src");
        Map<Path, Map<String, String>> modules = Map.of(
                dir.resolve("a"),
                MODULE_A,
                dir.resolve("b"),
                MODULE_B,
                dir.resolve("bench"),
                MODULE_BENCH,
                dir.resolve("a-tests"),
                MODULE_A_TESTS);
        List<String> files = new ArrayList<>();
        for (Map<String, String> sources : modules.values()) {
            for (var e : sources.entrySet()) {
                Path f = src.resolve(e.getKey());
                Files.createDirectories(f.getParent());
                Files.writeString(f, e.getValue());
                files.add(f.toString());
            }
        }
        Path out = dir.resolve("out");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        List<String> args =
                new ArrayList<>(List.of("-d", out.toString(), "-cp", System.getProperty("java.class.path")));
        args.addAll(files);
        assertEquals(0, javac.run(null, log, log, args.toArray(String[]::new)), () -> "the fixture compiles: " + log);
        // One compilation, then each module's class files into a root of its own.
        for (var e : modules.entrySet()) {
            for (String source : e.getValue().keySet()) {
                String stem = source.substring(0, source.length() - ".java".length());
                Path from = out.resolve(stem + ".class");
                Path to = e.getKey().resolve(stem + ".class");
                Files.createDirectories(to.getParent());
                Files.move(from, to);
            }
        }
        a = dir.resolve("a");
        all = Architecture.classesUnder(List.of(a, dir.resolve("b"), dir.resolve("bench")));
        aTests = Architecture.classesUnder(List.of(dir.resolve("a-tests")));
        assertEquals(14, all.size(), "every class of the fixture was read");
    }

    private static JavaClasses except(String... names) {
        List<String> drop = List.of(names);
        return all.that(DescribedPredicate.describe(
                "not " + drop, c -> drop.stream().noneMatch(n -> c.getName().equals("io.cuwire." + n))));
    }

    private static String violations(ArchRule rule, JavaClasses classes) {
        EvaluationResult r = rule.evaluate(classes);
        assertTrue(r.hasViolation(), () -> rule + " found nothing in " + classes);
        return String.join("\n", r.getFailureReport().getDetails());
    }

    @Test
    void shouldFailAClassThatUsesAnotherModulesInternalPackage() {
        String found = violations(Architecture.noInternalPackageOfAnotherModule(), all);
        assertTrue(
                found.contains("io.cuwire.fixa.UsesInternal")
                        && found.contains("io.cuwire.fixb.internal.Impl")
                        && found.contains("is internal to " + dir.resolve("b").toUri()),
                found);
        assertFalse(found.contains("UsesOwnInternal"), "a module's own internal package is its own to use: " + found);
        assertFalse(
                Architecture.noInternalPackageOfAnotherModule()
                        .evaluate(except("fixa.UsesInternal"))
                        .hasViolation(),
                "without the breach the rule passes");
    }

    @Test
    void shouldFailAPackageCycleWithinAModule() {
        String found = violations(Architecture.noPackageCycles(), except("fixb.Back"));
        assertTrue(found.contains("fixa.one") && found.contains("fixa.two"), found);
        assertFalse(
                Architecture.noPackageCycles()
                        .evaluate(except("fixb.Back", "fixa.two.Second"))
                        .hasViolation(),
                "without the cycles the rule passes (b's API and SPI name each other, which is no cycle)");
    }

    @Test
    void shouldFailAPackageCycleAcrossModules() {
        String found = violations(Architecture.noPackageCycles(), except("fixa.two.Second"));
        assertTrue(found.contains("fixa.split") && found.contains("fixb"), found);
    }

    @Test
    void shouldPassOnlyTheKnownCyclesAndFailOnesAddedOrGone() {
        JavaClasses withinOnly = except("fixb.Back");
        String cycle = "io.cuwire.fixa.one -> io.cuwire.fixa.two -> io.cuwire.fixa.one";
        assertEquals(List.of(cycle), Architecture.packageCycles(withinOnly));
        Architecture.checkPackageCycles(withinOnly, List.of(cycle));
        AssertionError added =
                assertThrows(AssertionError.class, () -> Architecture.checkPackageCycles(withinOnly, List.of()));
        assertTrue(
                added.getMessage().startsWith("package cycles: new, to remove: [" + cycle + "]"), added.getMessage());
        String other = "io.cuwire.fixa -> io.cuwire.fixb -> io.cuwire.fixa";
        AssertionError gone = assertThrows(
                AssertionError.class, () -> Architecture.checkPackageCycles(withinOnly, List.of(cycle, other)));
        assertTrue(
                gone.getMessage()
                        .startsWith("package cycles: known ones no longer found, to take off the list "
                                + "of known cycles: [" + other + "]"),
                gone.getMessage());
    }

    @Test
    void shouldFailABenchmarkClassInALibraryModule() {
        JavaClasses moduleA = all.that(DescribedPredicate.describe(
                "in a", c -> Architecture.moduleOf(c).equals(a.toUri().toString())));
        String found = violations(Architecture.noBenchmarkClasses(), moduleA);
        assertTrue(found.contains("io.cuwire.fixa.CopyBench"), "a *Bench class: " + found);
        assertTrue(
                found.contains("io.cuwire.fixa.Timed") && found.contains("io.cuwire.bench.harness.Runner"),
                "a class using the bench harness: " + found);
        assertFalse(
                Architecture.noBenchmarkClasses()
                        .evaluate(moduleA.that(DescribedPredicate.describe(
                                "no bench",
                                c -> !c.getSimpleName().equals("CopyBench")
                                        && !c.getSimpleName().equals("Timed"))))
                        .hasViolation(),
                "without them the rule passes");
    }

    @Test
    void shouldNameTheRootAClassWasReadFromAsItsModule() {
        assertEquals(a.toUri().toString(), Architecture.moduleOf(all.get("io.cuwire.fixa.Clean")));
        assertEquals(dir.resolve("b").toUri().toString(), Architecture.moduleOf(all.get("io.cuwire.fixb.Api")));
    }

    @Test
    void shouldFailAClassThatNamesAClassOfAForbiddenPackage() throws URISyntaxException {
        Path root = Path.of(ArchitectureRulesTest.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        JavaClasses tests = Architecture.classesUnder(List.of(root));
        assertTrue(
                Architecture.nameNoClassOf(ArchitectureRulesTest.class, "org.junit..")
                        .evaluate(tests)
                        .hasViolation(),
                "this test names JUnit's classes");
        assertFalse(
                Architecture.nameNoClassOf(ArchitectureRulesTest.class, "org.quicktheories..")
                        .evaluate(tests)
                        .hasViolation(),
                "and no QuickTheories class");
    }

    @Test
    void shouldFailATestMethodNotNamedShould() {
        String found = violations(Architecture.testMethodsNamedAsSpecs(), aTests);
        assertTrue(found.contains("io.cuwire.fixa.LooseTest.checksTheSum()"), "a @Test method: " + found);
        assertTrue(found.contains("io.cuwire.fixa.LooseTest.sumsInRows(int)"), "a @ParameterizedTest: " + found);
        assertFalse(found.contains("SumTest"), "should… test methods, life-cycle and other methods pass: " + found);
        assertFalse(
                Architecture.testMethodsNamedAsSpecs()
                        .evaluate(aTests.that(DescribedPredicate.describe(
                                "not LooseTest", c -> !c.getSimpleName().equals("LooseTest"))))
                        .hasViolation(),
                "without it the rule passes");
    }

    @Test
    void shouldReadTheTestClassesBesideTheMainClassesOfAModule() {
        JavaClasses tests = Architecture.testClassesOf(Architecture.class);
        assertTrue(tests.contain(ArchitectureRulesTest.class), "this module's test classes: " + tests);
        assertFalse(tests.contain(Architecture.class), "and not its main classes");
        assertFalse(
                Architecture.testMethodsNamedAsSpecs().evaluate(tests).hasViolation(),
                "this module's test methods are named should…");
    }
}
