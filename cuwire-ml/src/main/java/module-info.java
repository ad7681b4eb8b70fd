/**
 * Estimators with a scikit-learn-shaped API, the compute backend contract and its pure-Java CPU backend, and the
 * {@link io.cuwire.ml.spi.BackendProvider} SPI through which every backend comes: the CPU backend's provider here,
 * others in other modules ({@code io.cuwire.ml.cuda}). The CPU backend uses the Vector API when the JVM has
 * {@code jdk.incubator.vector} ({@code --add-modules jdk.incubator.vector}), plain loops otherwise. An estimator of
 * the application's own (a subclass of {@link io.cuwire.ml.Estimator}) has its parameters read reflectively here and
 * its fields by the serializer: its package {@code opens} to both,
 * {@code opens com.example.model to io.cuwire.serialize, io.cuwire.ml;}.
 */
module io.cuwire.ml {
    requires transitive io.cuwire.memory;
    requires transitive io.cuwire.serialize;
    requires static jdk.incubator.vector;

    exports io.cuwire.ml;
    exports io.cuwire.ml.cluster;
    exports io.cuwire.ml.decomposition;
    exports io.cuwire.ml.ensemble;
    exports io.cuwire.ml.linear;
    exports io.cuwire.ml.modelfile;
    exports io.cuwire.ml.naivebayes;
    exports io.cuwire.ml.neighbors;
    exports io.cuwire.ml.spi;
    exports io.cuwire.ml.types;

    // the generic serializer walks the estimators' and partial fits' fields
    opens io.cuwire.ml to
            io.cuwire.serialize;
    opens io.cuwire.ml.cluster to
            io.cuwire.serialize;
    opens io.cuwire.ml.decomposition to
            io.cuwire.serialize;
    opens io.cuwire.ml.ensemble to
            io.cuwire.serialize;
    opens io.cuwire.ml.internal to
            io.cuwire.serialize;
    opens io.cuwire.ml.linear to
            io.cuwire.serialize;
    opens io.cuwire.ml.naivebayes to
            io.cuwire.serialize;
    opens io.cuwire.ml.neighbors to
            io.cuwire.serialize;

    // the CPU backend, for host memory and the emulated device, is found as any other backend is
    provides io.cuwire.ml.spi.BackendProvider with
            io.cuwire.ml.internal.CpuBackendProvider;

    uses io.cuwire.ml.spi.BackendProvider;
}
