/**
 * The CUDA compute backend of {@code io.cuwire.ml}: cuBLAS and cuwire-ml's kernels. It exports nothing: cuwire-ml
 * finds it through {@link io.cuwire.ml.spi.BackendProvider} (on the module path, service binding resolves it with
 * {@code io.cuwire.ml}).
 */
module io.cuwire.ml.cuda {
    requires io.cuwire.cuda;
    requires io.cuwire.ml;

    provides io.cuwire.ml.spi.BackendProvider with
            io.cuwire.ml.cuda.internal.CudaBackendProvider;
}
