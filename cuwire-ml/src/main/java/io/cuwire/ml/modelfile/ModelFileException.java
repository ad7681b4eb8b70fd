package io.cuwire.ml.modelfile;

import java.io.Serial;

/**
 * A model file refused: not one at all, of a format version this reader does not know, or with content that is
 * unknown, inconsistent or beyond a limit. {@link #field()} names where the file went wrong, as a path into its header
 * ({@code format_version}, {@code arrays.coef_.shape}, {@code children_left[17]}); the message says what was found and
 * what was expected.
 */
public final class ModelFileException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    private final String field;

    /** A refusal at {@code field}: {@code problem} says what was wrong. */
    public ModelFileException(String field, String problem) {
        super(field + ": " + problem);
        this.field = field;
    }

    /** Where in the file: a header key path, or an array element. */
    public String field() {
        return field;
    }
}
