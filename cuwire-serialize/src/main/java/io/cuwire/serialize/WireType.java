package io.cuwire.serialize;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A type's stable name on the wire and its version, read by {@link TypeRegistry#register(Class)}. A type's version
 * goes up when its serialized form changes in a way older readers can't read.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface WireType {
    /** The registered name, e.g. {@code cuwire.ml.KMeans}. */
    String value();

    /** The type's version (0 when never changed). */
    int version() default 0;
}
