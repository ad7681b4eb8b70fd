package io.cuwire.serialize;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a field the generic serializer leaves out, like {@code transient}: native handles, caches. Rebuild it in
 * {@link PostDeserialize#postDeserialize()}.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.FIELD)
public @interface SkipSerialization {}
