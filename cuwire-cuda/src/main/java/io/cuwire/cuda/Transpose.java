package io.cuwire.cuda;

/** How a BLAS routine reads a matrix operand (column-major storage). */
public enum Transpose {
    /** As stored ({@code CUBLAS_OP_N}). */
    NONE(0),
    /** Transposed ({@code CUBLAS_OP_T}). */
    TRANSPOSE(1);

    private final int code;

    Transpose(int code) {
        this.code = code;
    }

    /** The {@code cublasOperation_t} value. */
    int code() {
        return code;
    }
}
