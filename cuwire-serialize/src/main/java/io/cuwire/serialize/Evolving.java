package io.cuwire.serialize;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a class (or record) whose generic-serializer reader ignores header fields it does not have: typically fields
 * that an earlier version of the class had and this one dropped.
 *
 * <p>Rules for a header of format version 2 (see {@link Serialized}): a header field that is not a field of the
 * receiving class fails the decode with a {@link SchemaMismatchException} naming the field and its path — unless
 * the class carries this annotation; then the entry is skipped (a nested value under it is not decoded, and frames
 * only it used stay with the {@link Serialized}, closed with it). Headers of format version 1 are read as that
 * version did: unknown fields are ignored for every class.
 *
 * <p>Not inherited: each class decides for its own fields, a subclass of an evolving class included. A field the
 * header lacks is allowed by {@link WireOptional}. Type versions ({@link WireType#version()}) still apply: a header
 * of a newer type version than the registered one is refused whatever the annotations.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface Evolving {}
