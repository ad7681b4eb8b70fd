package io.cuwire.serialize;

/**
 * Turns one type into header values and frames and back. Registered per type and family in a
 * {@link TypeRegistry}. Implementations are stateless and thread-safe.
 *
 * @param <T> the type
 */
public interface Serializer<T> {
    /** Writes {@code value}: simple values with {@link WriteContext#put}, nested values and frames likewise. */
    void write(WriteContext out, T value);

    /** Rebuilds a value from what {@link #write} wrote. */
    T read(ReadContext in);
}
