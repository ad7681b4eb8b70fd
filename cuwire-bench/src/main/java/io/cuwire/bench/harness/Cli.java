package io.cuwire.bench.harness;

import io.cuwire.serialize.Family;
import java.util.Arrays;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;

/**
 * The benchmarks' one option parser, picocli: each benchmark declares its options in an {@code Args} class (typed
 * fields with {@code @Option}, defaults and descriptions) that the {@code cuwire bench} commands mix in and that
 * {@link #parse} fills from an argument list, and builds its typed {@code Options} record from it. Sizes go through
 * {@link Sizes}, families by their wire names, enumerations case-insensitively.
 */
public final class Cli {
    private Cli() {}

    /** A command line over {@code command} set up as every benchmark's: enumerations case-insensitive, no @-files. */
    public static CommandLine commandLine(Object command) {
        return new CommandLine(command)
                .setCaseInsensitiveEnumValuesAllowed(true)
                .setExpandAtFiles(false);
    }

    /**
     * Fills {@code args} (an object with {@code @Option} fields) from {@code argv}.
     *
     * @return {@code args}
     * @throws IllegalArgumentException with picocli's message, which names the option, for a bad option or value
     */
    public static <T> T parse(T args, String... argv) {
        try {
            commandLine(args).parseArgs(argv);
        } catch (ParameterException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        return args;
    }

    /**
     * {@code value} of {@code option} when it is at least {@code min}.
     *
     * @throws IllegalArgumentException naming the option and the value otherwise
     */
    public static int atLeast(String option, int value, int min) {
        if (value < min) {
            throw new IllegalArgumentException(option + " " + value + " (expected: >= " + min + ")");
        }
        return value;
    }

    /** A size option's value: {@link Sizes#parse}. */
    public static final class SizeConverter implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return Sizes.parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /** A serializer family by its wire name: {@code cuda}, {@code host}, {@code java}, .... */
    public static final class FamilyConverter implements ITypeConverter<Family> {
        @Override
        public Family convert(String value) {
            for (Family f : Family.values()) {
                if (f.wireName().equals(value.strip().toLowerCase(Locale.ROOT))) {
                    return f;
                }
            }
            throw new TypeConversionException("unknown family '" + value + "' (expected: one of "
                    + Arrays.stream(Family.values()).map(Family::wireName).toList() + ")");
        }
    }
}
