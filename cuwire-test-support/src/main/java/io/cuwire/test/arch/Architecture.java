package io.cuwire.test.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.methods;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaMethod;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.Location;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.EvaluationResult;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import com.tngtech.archunit.library.dependencies.SlicesRuleDefinition;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The architecture rules every cuwire module's build checks ({@code ArchitectureTest} in each module), on ArchUnit:
 *
 * <ul>
 *   <li>{@link #noInternalPackageOfAnotherModule()}: no class uses a class of another module's {@code internal}
 *       package;</li>
 *   <li>{@link #noPackageCycles()}: the packages of the cuwire classes seen, within a module and across modules,
 *       depend on each other without a cycle;</li>
 *   <li>{@link #noBenchmarkClasses()}: a library module holds no benchmark: no {@code *Bench} or {@code *Benchmark}
 *       class, nothing that uses the bench harness ({@code io.cuwire.bench..}) or JMH;</li>
 *   <li>{@link #testMethodsNamedAsSpecs()}: every test method of the module's test classes is named
 *       {@code should…}.</li>
 * </ul>
 *
 * <p>A class's module is where it was read from: the class path root (a module's {@code target/classes}, or its jar)
 * that holds its class file ({@link #moduleOf}). So a package split between two modules is two modules' classes, and
 * an {@code internal} package is its module's, whatever its name. {@link #mainClasses()} reads the cuwire classes
 * of the running tests' class path but no test classes (the naming rule alone reads the module's own test classes,
 * {@link #testClassesOf}); each rule is shown to fail on classes that break it by
 * {@code ArchitectureRulesTest}, which compiles such classes into two roots of its own.
 */
public final class Architecture {
    private static final Pattern INTERNAL = Pattern.compile("(^|.*\\.)internal(\\..*)?");
    private static final Pattern SLICE = Pattern.compile("Slice (\\S+)");
    /** The JUnit annotations that make a method a test method. */
    private static final List<String> TEST_ANNOTATIONS = List.of(
            "org.junit.jupiter.api.Test",
            "org.junit.jupiter.params.ParameterizedTest",
            "org.junit.jupiter.api.RepeatedTest",
            "org.junit.jupiter.api.TestFactory",
            "org.junit.jupiter.api.TestTemplate");

    /**
     * Each package of {@code io.cuwire} is a slice of the cycle rule, but for a module's service provider interface:
     * {@code x.spi} is {@code x}'s slice, since an SPI and its API name each other by design (a provider returns the
     * API's types, the API finds the providers), as {@code java.nio.channels} and its {@code spi} do.
     */
    private static final SliceAssignment PACKAGES = new SliceAssignment() {
        @Override
        public SliceIdentifier getIdentifierOf(JavaClass c) {
            String p = c.getPackageName();
            if (!p.equals("io.cuwire") && !p.startsWith("io.cuwire.")) {
                return SliceIdentifier.ignore();
            }
            return SliceIdentifier.of(p.endsWith(".spi") ? p.substring(0, p.length() - ".spi".length()) : p);
        }

        @Override
        public String getDescription() {
            return "the packages of io.cuwire (x.spi counted as x)";
        }
    };

    private Architecture() {}

    /**
     * The main classes of every cuwire module on this JVM's class path: the class path entries that are a cuwire
     * module's {@code target/classes} or its jar (no test classes, no other library).
     */
    public static JavaClasses mainClasses() {
        Set<Location> roots = new LinkedHashSet<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            String file = p.getFileName() == null ? "" : p.getFileName().toString();
            if (Files.isDirectory(p)
                    && p.endsWith(Path.of("target", "classes"))
                    && p.getParent().getParent().getFileName().toString().startsWith("cuwire-")) {
                roots.add(Location.of(p));
            } else if (file.startsWith("cuwire-") && file.endsWith(".jar") && !file.endsWith("-tests.jar")) {
                try {
                    roots.add(Location.of(new JarFile(p.toFile())));
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot read the class path entry " + p, e);
                }
            }
        }
        if (roots.isEmpty()) {
            throw new IllegalStateException(
                    "no cuwire module on the class path: " + System.getProperty("java.class.path"));
        }
        return new ClassFileImporter().importLocations(roots);
    }

    /** The classes under the given class path roots (directories of class files), for rules over chosen classes. */
    public static JavaClasses classesUnder(Collection<Path> roots) {
        return new ClassFileImporter().importPaths(roots);
    }

    /**
     * The test classes of the module that holds {@code anchor}: its {@code target/test-classes}, beside the
     * {@code target/classes} that holds {@code anchor}; none where {@code anchor} was read from elsewhere (a jar).
     */
    public static JavaClasses testClassesOf(Class<?> anchor) {
        Path root;
        try {
            root = Path.of(
                    anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException("cannot tell where " + anchor.getName() + " was read from", e);
        }
        Path tests = root.resolveSibling("test-classes");
        return classesUnder(
                root.endsWith(Path.of("target", "classes")) && Files.isDirectory(tests) ? List.of(tests) : List.of());
    }

    /** The classes of {@code classes} that were read from the module (class path root) that holds {@code anchor}. */
    public static JavaClasses moduleOf(JavaClasses classes, Class<?> anchor) {
        String module = moduleOf(classes.get(anchor));
        return classes.that(DescribedPredicate.describe(
                "read from " + module, c -> moduleOf(c).equals(module)));
    }

    /**
     * The module a class was read from: the class path root of its class file (a directory or a jar), or
     * {@code "(unknown)"} for a class ArchUnit did not read from a file.
     */
    public static String moduleOf(JavaClass c) {
        if (c.isArray()) {
            return moduleOf(c.getBaseComponentType());
        }
        return c.getSource()
                .map(s -> {
                    String uri = s.getUri().toString();
                    String file = c.getName().replace('.', '/') + ".class";
                    return uri.endsWith(file) ? uri.substring(0, uri.length() - file.length()) : uri;
                })
                .orElse("(unknown)");
    }

    /** Whether {@code packageName} is an {@code internal} package or one below it. */
    public static boolean isInternal(String packageName) {
        return INTERNAL.matcher(packageName).matches();
    }

    /** No class uses a class of an {@code internal} package that another module holds. */
    public static ArchRule noInternalPackageOfAnotherModule() {
        ArchCondition<JavaClass> condition = new ArchCondition<>("use no internal package of another module") {
            @Override
            public void check(JavaClass origin, ConditionEvents events) {
                String from = moduleOf(origin);
                for (Dependency d : origin.getDirectDependenciesFromSelf()) {
                    JavaClass target = d.getTargetClass().isArray()
                            ? d.getTargetClass().getBaseComponentType()
                            : d.getTargetClass();
                    if (isInternal(target.getPackageName())
                            && target.getPackageName().startsWith("io.cuwire.")
                            && !moduleOf(target).equals(from)) {
                        events.add(SimpleConditionEvent.violated(
                                d,
                                d.getDescription() + ": "
                                        + target.getPackageName() + " is internal to " + moduleOf(target) + ", not to "
                                        + from));
                    }
                }
            }
        };
        return classes().that().resideInAPackage("io.cuwire..").should(condition);
    }

    /** The packages of {@code io.cuwire} depend on each other without a cycle ({@code x.spi} counts as {@code x}). */
    public static ArchRule noPackageCycles() {
        return SlicesRuleDefinition.slices().assignedFrom(PACKAGES).should().beFreeOfCycles();
    }

    /**
     * The package cycles of {@link #noPackageCycles()} among {@code classes}, each as the packages it passes
     * through, {@code "io.cuwire.a -> io.cuwire.b -> io.cuwire.a"}, starting from its first package by name.
     */
    public static List<String> packageCycles(JavaClasses classes) {
        EvaluationResult result = noPackageCycles().evaluate(classes);
        Set<String> found = new TreeSet<>();
        for (String detail : result.getFailureReport().getDetails()) {
            int end = detail.indexOf("\n  1.");
            Matcher m = SLICE.matcher(end < 0 ? detail : detail.substring(0, end));
            List<String> ring = new ArrayList<>();
            while (m.find()) {
                ring.add(m.group(1));
            }
            ring.removeLast(); // the first again
            int first = ring.indexOf(ring.stream().min(String::compareTo).orElseThrow());
            List<String> cycle = new ArrayList<>(ring.subList(first, ring.size()));
            cycle.addAll(ring.subList(0, first));
            cycle.add(cycle.getFirst());
            found.add(String.join(" -> ", cycle));
        }
        return List.copyOf(found);
    }

    /**
     * Fails unless the package cycles among {@code classes} are exactly {@code known}: a cycle not on the list is a
     * new one (remove it), a listed one not found is gone (take it off the list, so the list only shrinks).
     */
    public static void checkPackageCycles(JavaClasses classes, List<String> known) {
        List<String> found = packageCycles(classes);
        List<String> added = found.stream().filter(c -> !known.contains(c)).toList();
        List<String> gone = known.stream().filter(c -> !found.contains(c)).toList();
        if (!added.isEmpty() || !gone.isEmpty()) {
            throw new AssertionError("package cycles: "
                    + (added.isEmpty() ? "" : "new, to remove: " + added + (gone.isEmpty() ? "" : "; "))
                    + (gone.isEmpty()
                            ? ""
                            : "known ones no longer found, to take " + "off the list of known cycles: " + gone)
                    + "\n"
                    + String.join(
                            "\n",
                            noPackageCycles()
                                    .evaluate(classes)
                                    .getFailureReport()
                                    .getDetails()));
        }
    }

    /** No benchmark class: none named {@code *Bench} or {@code *Benchmark}, none using the bench harness or JMH. */
    public static ArchRule noBenchmarkClasses() {
        return noClasses()
                .should()
                .haveSimpleNameEndingWith("Bench")
                .orShould()
                .haveSimpleNameEndingWith("Benchmark")
                .orShould()
                .dependOnClassesThat()
                .resideInAnyPackage("io.cuwire.bench..", "org.openjdk.jmh..")
                .because("benchmarks live in cuwire-bench, on its harness, out of the library jars");
    }

    /**
     * Every test method (annotated {@code @Test}, {@code @ParameterizedTest}, {@code @RepeatedTest},
     * {@code @TestFactory} or {@code @TestTemplate}) is named {@code should…}, so that it reads as a spec of its
     * subject; life-cycle methods ({@code @BeforeEach}, ...) are not test methods and are named as they please.
     */
    public static ArchRule testMethodsNamedAsSpecs() {
        DescribedPredicate<JavaMethod> testMethods = DescribedPredicate.describe(
                "are test methods (@Test, " + "@ParameterizedTest, @RepeatedTest, @TestFactory, @TestTemplate)",
                m -> TEST_ANNOTATIONS.stream().anyMatch(m::isAnnotatedWith));
        return methods()
                .that(testMethods)
                .should()
                .haveNameStartingWith("should")
                .because("a test method reads as a spec of its subject (cuwire-test-support/README.md)")
                .allowEmptyShould(true);
    }

    /** {@code origin} and its nested classes name no class of a package that {@code packageIdentifiers} match. */
    public static ArchRule nameNoClassOf(Class<?> origin, String... packageIdentifiers) {
        return noClasses()
                .that()
                .belongToAnyOf(origin)
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(packageIdentifiers);
    }

    /**
     * Checks the four rules for the module that holds {@code anchor}, a library module: its classes use no other
     * module's {@code internal} package, its packages (with the classes of other modules in them) have no cycle, it
     * holds no benchmark class, and its test methods are named {@code should…}.
     */
    public static void checkLibrary(Class<?> anchor) {
        checkLibrary(anchor, List.of());
    }

    /** As {@link #checkLibrary(Class)}, where the module's package cycles are exactly {@code knownCycles}. */
    public static void checkLibrary(Class<?> anchor, List<String> knownCycles) {
        check(anchor, knownCycles, true);
    }

    /**
     * The rules of {@link #checkLibrary} but the one against benchmarks, for an application module (cuwire-bench,
     * cuwire-cli).
     */
    public static void checkApplication(Class<?> anchor) {
        check(anchor, List.of(), false);
    }

    private static void check(Class<?> anchor, List<String> knownCycles, boolean library) {
        JavaClasses all = mainClasses();
        JavaClasses own = moduleOf(all, anchor);
        Set<String> packages = new TreeSet<>();
        own.forEach(c -> packages.add(c.getPackageName()));
        noInternalPackageOfAnotherModule().check(own);
        checkPackageCycles(
                all.that(DescribedPredicate.describe(
                        "in the packages of " + moduleOf(own.get(anchor)), c -> packages.contains(c.getPackageName()))),
                knownCycles);
        if (library) {
            noBenchmarkClasses().check(own);
        }
        testMethodsNamedAsSpecs().check(testClassesOf(anchor));
    }
}
