package io.cuwire.ml;

/** A reduction of all elements to one number ({@link ComputeBackend#reduce}). */
public enum Reduction {
    SUM,
    MIN,
    MAX
}
