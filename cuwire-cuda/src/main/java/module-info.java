/**
 * The CUDA platform through the foreign function API: the driver ({@code libcuda.so.1}) and cuBLAS, the CUDA device
 * and its memory pool, streams, events and kernel launching. Provides the {@code cuda} device platform to
 * {@code io.cuwire.memory}. Calls native code: run with {@code --enable-native-access=io.cuwire.cuda} (README, "Add
 * cuwire to your build").
 */
module io.cuwire.cuda {
    requires transitive io.cuwire.memory;

    exports io.cuwire.cuda;

    provides io.cuwire.memory.spi.DeviceProvider with
            io.cuwire.cuda.internal.CudaDeviceProvider;
}
