package io.cuwire.serialize;

import java.util.List;

/**
 * A well-formed header whose fields do not fit the receiving class (generic serializer, format version 2): fields the
 * class requires that the header lacks (not {@link WireOptional}), and header fields the class does not have (the
 * class is not {@link Evolving}). Raised before any field of the value is decoded.
 */
public class SchemaMismatchException extends SerializationException {
    private static final long serialVersionUID = 1L;

    private final List<String> missing;
    private final List<String> unknown;

    /**
     * A mismatch.
     *
     * @param type the receiving class
     * @param path the value's path from the root
     * @param missing required fields the header lacks, in the class's order
     * @param unknown header fields the class lacks, in the header's order
     */
    public SchemaMismatchException(Class<?> type, String path, List<String> missing, List<String> unknown) {
        super(message(type, path, missing, unknown), path, null);
        this.missing = List.copyOf(missing);
        this.unknown = List.copyOf(unknown);
    }

    private static String message(Class<?> type, String path, List<String> missing, List<String> unknown) {
        StringBuilder sb = new StringBuilder("header of ")
                .append(type.getName())
                .append(" at ")
                .append(path)
                .append(" does not fit the class:");
        if (!missing.isEmpty()) {
            sb.append(" it lacks field")
                    .append(missing.size() == 1 ? " " : "s ")
                    .append(quoted(path, missing))
                    .append(" (a field older writers leave out must be @WireOptional)");
        }
        if (!unknown.isEmpty()) {
            sb.append(missing.isEmpty() ? " it has " : "; it has ")
                    .append(unknown.size() == 1 ? "field " : "fields ")
                    .append(quoted(path, unknown))
                    .append(" the class does not (a class that dropped fields must "
                            + "be @Evolving to read older headers)");
        }
        return sb.toString();
    }

    private static String quoted(String path, List<String> fields) {
        StringBuilder sb = new StringBuilder();
        for (String f : fields) {
            if (!sb.isEmpty()) {
                sb.append(", ");
            }
            sb.append('\'').append(path).append('.').append(f).append('\'');
        }
        return sb.toString();
    }

    /** Fields of the class the header lacks. */
    public List<String> missing() {
        return missing;
    }

    /** Header fields the class lacks. */
    public List<String> unknown() {
        return unknown;
    }
}
