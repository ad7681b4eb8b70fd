package io.cuwire.memory;

/** How the elements of an {@link NdArray} of rank two or more are laid out in its buffer. */
public enum Order {
    /** Row-major (C, NumPy's default): the last index varies fastest. */
    C,
    /** Column-major (Fortran, cuBLAS, cuML's default): the first index varies fastest. */
    F
}
