package io.cuwire.ml;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a field of an {@link Estimator} as a hyper-parameter: set before fitting, listed by
 * {@link Estimator#params()}, settable by name with {@link Estimator#setParams}, and carried in the header when the
 * estimator is serialized. Fields without it that hold arrays are fitted state.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.FIELD)
public @interface Param {}
