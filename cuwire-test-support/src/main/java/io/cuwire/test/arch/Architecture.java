package io.cuwire.test.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.library.dependencies.SlicesRuleDefinition;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
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
 *       class, nothing that uses the bench harness ({@code io.cuwire.bench..}) or JMH.</li>
 * </ul>
 *
 * <p>A class's module is where it was read from: the class path root (a module's {@code target/classes}, or its jar)
 * that holds its class file ({@link #moduleOf}). So a package split between two modules is two modules' classes, and
 * an {@code internal} package is its module's, whatever its name. {@link #mainClasses()} reads the cuwire classes
 * of the running tests' class path but no test classes; each rule is shown to fail on classes that break it by
 * {@code ArchitectureRulesTest}, which compiles such classes into two roots of its own.
 */
public final class Architecture {
    private static final Pattern INTERNAL = Pattern.compile("(^|.*\\.)internal(\\..*)?");

    /** Main classes only: no test-classes directory, no test jar. */
    private static final ImportOption MAIN_CLASSES = location -> !location.contains("/test-classes/")
            && !location.contains("-tests.jar") && !location.contains("/target/test/");

    private Architecture() {
    }

    /** The main classes of every cuwire module on this JVM's class path ({@code io.cuwire..}, no test classes). */
    public static JavaClasses mainClasses() {
        return new ClassFileImporter().withImportOption(MAIN_CLASSES).importPackages("io.cuwire");
    }

    /** The classes under the given class path roots (directories of class files), for rules over chosen classes. */
    public static JavaClasses classesUnder(Collection<Path> roots) {
        return new ClassFileImporter().importPaths(roots);
    }

    /** The classes of {@code classes} that were read from the module (class path root) that holds {@code anchor}. */
    public static JavaClasses moduleOf(JavaClasses classes, Class<?> anchor) {
        String module = moduleOf(classes.get(anchor));
        return classes.that(DescribedPredicate.describe("read from " + module, c -> moduleOf(c).equals(module)));
    }

    /**
     * The module a class was read from: the class path root of its class file (a directory or a jar), or
     * {@code "(unknown)"} for a class ArchUnit did not read from a file.
     */
    public static String moduleOf(JavaClass c) {
        if (c.isArray()) {
            return moduleOf(c.getBaseComponentType());
        }
        return c.getSource().map(s -> {
            String uri = s.getUri().toString();
            String file = c.getName().replace('.', '/') + ".class";
            return uri.endsWith(file) ? uri.substring(0, uri.length() - file.length()) : uri;
        }).orElse("(unknown)");
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
                    JavaClass target = d.getTargetClass().isArray() ? d.getTargetClass().getBaseComponentType()
                            : d.getTargetClass();
                    if (isInternal(target.getPackageName()) && target.getPackageName().startsWith("io.cuwire.")
                            && !moduleOf(target).equals(from)) {
                        events.add(SimpleConditionEvent.violated(d, d.getDescription() + ": "
                                + target.getPackageName() + " is internal to " + moduleOf(target) + ", not to "
                                + from));
                    }
                }
            }
        };
        return classes().that().resideInAPackage("io.cuwire..").should(condition);
    }

    /** The packages of {@code io.cuwire} depend on each other without a cycle. */
    public static ArchRule noPackageCycles() {
        return noPackageCyclesBut(List.of());
    }

    /**
     * As {@link #noPackageCycles()}, ignoring the dependencies of the classes named in {@code known} on the classes of
     * the packages named with them: {@code "io.cuwire.x.Origin -> io.cuwire.x.internal"}, one known cycle's edge each,
     * to be removed as the cycles are.
     */
    public static ArchRule noPackageCyclesBut(List<String> known) {
        var rule = SlicesRuleDefinition.slices().matching("io.cuwire.(**)").namingSlices("$1").should()
                .beFreeOfCycles();
        for (String edge : known) {
            String[] parts = edge.split("\\s*->\\s*");
            if (parts.length != 2) {
                throw new IllegalArgumentException("a known cycle edge is 'origin class -> target package': " + edge);
            }
            rule = rule.ignoreDependency(DescribedPredicate.describe(parts[0], c -> c.getName().equals(parts[0])
                    || c.getName().startsWith(parts[0] + "$")),
                    DescribedPredicate.describe(parts[1], c -> c.getPackageName().equals(parts[1])));
        }
        return rule;
    }

    /** No benchmark class: none named {@code *Bench} or {@code *Benchmark}, none using the bench harness or JMH. */
    public static ArchRule noBenchmarkClasses() {
        return noClasses().should().haveSimpleNameEndingWith("Bench")
                .orShould().haveSimpleNameEndingWith("Benchmark")
                .orShould().dependOnClassesThat().resideInAnyPackage("io.cuwire.bench..", "org.openjdk.jmh..")
                .because("benchmarks live in cuwire-bench, on its harness, out of the library jars");
    }

    /** {@code origin} and its nested classes name no class of a package that {@code packageIdentifiers} match. */
    public static ArchRule nameNoClassOf(Class<?> origin, String... packageIdentifiers) {
        return noClasses().that().belongToAnyOf(origin).should().dependOnClassesThat()
                .resideInAnyPackage(packageIdentifiers);
    }

    /**
     * Checks the three rules over the main classes of this class path, {@link #noBenchmarkClasses()} over the module
     * that holds {@code anchor} only (a library module: cuwire-bench and cuwire-cli check the first two only, with
     * {@link #checkApplication}).
     */
    public static void checkLibrary(Class<?> anchor) {
        checkLibrary(anchor, List.of());
    }

    /** As {@link #checkLibrary(Class)}, with the known cycles' edges of {@link #noPackageCyclesBut}. */
    public static void checkLibrary(Class<?> anchor, List<String> knownCycleEdges) {
        JavaClasses all = mainClasses();
        noInternalPackageOfAnotherModule().check(all);
        noPackageCyclesBut(knownCycleEdges).check(all);
        noBenchmarkClasses().check(moduleOf(all, anchor));
    }

    /** The first two rules over the main classes of this class path (an application module: bench, cli). */
    public static void checkApplication() {
        JavaClasses all = mainClasses();
        noInternalPackageOfAnotherModule().check(all);
        noPackageCycles().check(all);
    }
}
