package io.cuwire.serialize;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a field (or record component) that the generic serializer may find missing from a header: typically one
 * added in a later version of its class, which headers written by the earlier version lack.
 *
 * <p>Rules for a header of format version 2 (see {@link Serialized}): every field of the receiving class that is
 * not {@code transient} or {@link SkipSerialization} must be in the header, or decoding fails with a
 * {@link SchemaMismatchException} naming the field and its path — unless the field carries this annotation. A
 * missing optional field keeps the value the class's no-argument constructor and field initialisers gave it; where
 * the instance is built without running a constructor, and for a record component (passed to the canonical
 * constructor), it gets Java's default ({@code null}, {@code 0}, {@code false}). A field that is present is set from
 * the header, annotated or not. Headers of format version 1 are read as that version did: any field may be missing.
 *
 * <p>The writer always writes every field; the annotation only changes what a reader accepts. Its opposite, a header
 * field the class no longer has, is allowed by {@link Evolving}.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD, ElementType.RECORD_COMPONENT})
public @interface WireOptional {}
