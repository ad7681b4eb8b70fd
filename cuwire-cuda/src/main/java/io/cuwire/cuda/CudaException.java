package io.cuwire.cuda;

import io.cuwire.memory.MemoryException;

/**
 * A CUDA driver or cuBLAS call failed, or the library it needs could not be loaded. The message names the call
 * (with its main arguments) and the library's own name for the error, e.g.
 * {@code cuMemAlloc_v2(1073741824 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (2)}.
 */
public class CudaException extends MemoryException {
    private static final long serialVersionUID = 1L;

    /** The {@link #result()} of failures that are not a library's result code (a library that is missing). */
    public static final int NO_RESULT = -1;

    private final int result;
    private final String errorName;

    /**
     * A failed call.
     *
     * @param call the function and its main arguments, e.g. {@code cuMemAlloc_v2(1024 bytes)}
     * @param result the {@code CUresult} (or {@code cublasStatus_t}) it returned
     * @param errorName the library's name for {@code result}, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    public CudaException(String call, int result, String errorName) {
        super(message(call, result, errorName));
        this.result = result;
        this.errorName = errorName;
    }

    /** A failure that is not a call's result (a library that can't be loaded); {@link #result()} is -1. */
    public CudaException(String message, Throwable cause) {
        super(message, cause);
        this.result = NO_RESULT;
        this.errorName = "";
    }

    /** The message of a failed call: {@code call failed: ERROR_NAME (result)}. */
    public static String message(String call, int result, String errorName) {
        return call + " failed: " + errorName + " (" + result + ")";
    }

    /** The code the call returned ({@code CUresult} or {@code cublasStatus_t}), or {@link #NO_RESULT}. */
    public int result() {
        return result;
    }

    /** The library's name for {@link #result()}, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}; empty without a result. */
    public String errorName() {
        return errorName;
    }
}
